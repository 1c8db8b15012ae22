#pragma once
// SHA-256, so a candidate version is named by its source bytes (FIPS 180-4).
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace attngate::hooks {

std::string sha256_hex(std::string_view data);
// nullopt when the file cannot be read.
std::optional<std::string> sha256_file(const std::filesystem::path& file);
std::optional<std::string> read_file(const std::filesystem::path& file);

}  // namespace attngate::hooks
