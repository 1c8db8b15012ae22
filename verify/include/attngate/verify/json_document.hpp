// What attngate's typed JSON documents share: null <-> std::nullopt, and parsing a document of a
// named schema into its struct. Header only, no CUDA.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>

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

}  // namespace attngate
