// The subset of JSON Schema (2020-12) that attngate's schemas use: $ref into #/$defs, oneOf, type,
// const, enum, minimum, required, properties, items. Enough for the tests that hold the documents
// crossing process boundaries (verify results, gate results) to their schemas; not a validator
// for schemas in general (any other keyword is ignored).
//
// Header only (nlohmann::json); CMake target attngate::verify_result.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace attngate::verify {

namespace schema_detail {

inline bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  return false;
}

inline void check(const nlohmann::json& root, const nlohmann::json& schema, const nlohmann::json& v,
                  const std::string& where, std::vector<std::string>& problems) {
  using nlohmann::json;
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"], prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) return problems.push_back(where + ": unsupported $ref " + ref);
    return check(root, root["$defs"][ref.substr(prefix.size())], v, where, problems);
  }
  if (schema.contains("oneOf")) {
    int matched = 0;
    for (const auto& alt : schema["oneOf"]) {
      std::vector<std::string> p;
      check(root, alt, v, where, p);
      matched += p.empty();
    }
    if (matched != 1) problems.push_back(where + ": matches " + std::to_string(matched) + " of oneOf");
  }
  if (schema.contains("type")) {
    const json types = schema["type"].is_array() ? schema["type"] : json::array({schema["type"]});
    bool any = false;
    for (const auto& t : types) any = any || has_type(v, t.get<std::string>());
    if (!any) problems.push_back(where + ": " + v.dump() + " is not of type " + schema["type"].dump());
  }
  if (schema.contains("const") && v != schema["const"]) problems.push_back(where + ": not " + schema["const"].dump());
  if (schema.contains("enum") && std::find(schema["enum"].begin(), schema["enum"].end(), v) == schema["enum"].end())
    problems.push_back(where + ": " + v.dump() + " not in " + schema["enum"].dump());
  if (schema.contains("minimum") && v.is_number() && v.get<double>() < schema["minimum"].get<double>())
    problems.push_back(where + ": below the minimum");
  if (v.is_object()) {
    for (const auto& key : schema.value("required", json::array()))
      if (!v.contains(key.get<std::string>()))
        problems.push_back(where + ": missing required '" + key.get<std::string>() + "'");
    const json properties = schema.value("properties", json::object());  // outlives the loop
    for (const auto& [key, sub] : properties.items())
      if (v.contains(key)) check(root, sub, v[key], where + "." + key, problems);
  }
  if (v.is_array() && schema.contains("items"))
    for (size_t i = 0; i < v.size(); ++i) check(root, schema["items"], v[i], where + "[" + std::to_string(i) + "]", problems);
}

}  // namespace schema_detail

// Where `doc` breaks `schema`, one line per problem ("$.runs[0].o: missing required 'max_abs'").
inline std::vector<std::string> schema_problems(const nlohmann::json& schema, const nlohmann::json& doc) {
  std::vector<std::string> problems;
  schema_detail::check(schema, schema, doc, "$", problems);
  return problems;
}

}  // namespace attngate::verify
