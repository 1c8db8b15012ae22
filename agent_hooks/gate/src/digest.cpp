// SHA-256 and HMAC-SHA256 through OpenSSL's libcrypto (one-shot EVP_Digest and HMAC).
#include "attngate/gate/digest.hpp"

#include <algorithm>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attngate::hooks {

Sha256Digest sha256_digest(std::string_view data) {
  Sha256Digest d{};
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &n, EVP_sha256(), nullptr) != 1 || n != d.size())
    throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": EVP_Digest(SHA-256) failed");
  return d;
}

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xf]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  const Sha256Digest d = sha256_digest(data);
  return to_hex({reinterpret_cast<const char*>(d.data()), d.size()});
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  Sha256Digest d{};
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), d.data(), &n) ||
      n != d.size())
    throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": HMAC(SHA-256) failed");
  return to_hex({reinterpret_cast<const char*>(d.data()), d.size()});
}

std::optional<std::string> read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::optional<std::string> sha256_file(const std::filesystem::path& file) {
  auto text = read_file(file);
  if (!text) return std::nullopt;
  return sha256_hex(*text);
}

bool is_sha256_hex(const std::string& h) {
  return h.size() == 64 && std::all_of(h.begin(), h.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace attngate::hooks
