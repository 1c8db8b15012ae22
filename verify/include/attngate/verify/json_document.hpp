// What attngate's typed JSON documents share: null <-> std::nullopt, parsing a document of a named
// schema into its struct, and writing one so that no reader sees half of it. Header only, no CUDA.
#pragma once

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>

// null <-> std::nullopt: a figure or field that is unknown. nlohmann 3.11.2 has no std::optional
// support.
NLOHMANN_JSON_NAMESPACE_BEGIN
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v) j = *v;
    else j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) v.reset();
    else v = j.get<T>();
  }
};
NLOHMANN_JSON_NAMESPACE_END

namespace attngate {

// The `Document` in `j`; throws nlohmann::json::exception when `j` is not an object whose `schema`
// is `schema`, or a field has the wrong type. Absent fields take their defaults.
template <class Document>
Document parse_document(const nlohmann::json& j, const char* schema) {
  if (!j.is_object()) throw nlohmann::json::other_error::create(501, "not an object", &j);
  const auto it = j.find("schema");
  if (it == j.end()) throw nlohmann::json::other_error::create(501, "no schema", &j);
  if (*it != schema) throw nlohmann::json::other_error::create(501, "schema is " + it->dump(), &j);
  return j.get<Document>();
}

// Writes `bytes` to `file` through a temporary file beside it and a rename, so that a reader (the
// gate's report, a progress display, a concurrent writer's reader) never sees half a document.
// Throws std::runtime_error naming the file when it cannot be written.
inline void write_file_atomically(const std::filesystem::path& file, const std::string& bytes) {
  const std::filesystem::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << bytes;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) throw std::runtime_error("cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message());
}

}  // namespace attngate
