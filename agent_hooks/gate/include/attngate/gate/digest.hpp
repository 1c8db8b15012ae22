#pragma once
// SHA-256 (OpenSSL's libcrypto), so a candidate version is named by its source bytes, and HMAC-SHA256
// (RFC 2104), so a gate run's receipt can be checked by `attngate commit`.
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attngate::hooks {

using Sha256Digest = std::array<unsigned char, 32>;

Sha256Digest sha256_digest(std::string_view data);
std::string sha256_hex(std::string_view data);
std::string hmac_sha256_hex(std::string_view key, std::string_view message);
std::string to_hex(std::string_view bytes);  // lowercase
// nullopt when the file cannot be read.
std::optional<std::string> sha256_file(const std::filesystem::path& file);
std::optional<std::string> read_file(const std::filesystem::path& file);
// A build hash as the worker's build writes it: 64 lowercase hex digits. Anything else (empty, a
// NUL in front, another length) names no build.
bool is_sha256_hex(const std::string& h);

}  // namespace attngate::hooks
