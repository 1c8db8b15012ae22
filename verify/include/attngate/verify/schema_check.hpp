// Holds a document crossing a process boundary (verify results, timed comparisons, gate results)
// to its JSON Schema, with valijson (a validator for the whole of drafts 4-7; attngate's schemas
// name 2020-12 but use only keywords draft 7 has, $defs reached through JSON-pointer $refs).
//
// Header only (nlohmann::json, valijson); CMake target attngate::verify_result.
#pragma once

#include <nlohmann/json.hpp>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include <string>
#include <vector>

namespace attngate::verify {

namespace schema_detail {

// valijson's context ("<root>", "[field]", "[3]") as a path ("$.field[3]") and as a JSON pointer.
inline std::string path_of(const std::vector<std::string>& context, nlohmann::json::json_pointer& at) {
  std::string where = "$";
  for (const auto& step : context) {
    if (step == "<root>") continue;
    const bool bracketed = step.size() > 2 && step.front() == '[' && step.back() == ']';
    const std::string name = bracketed ? step.substr(1, step.size() - 2) : step;
    const bool index = bracketed && name.find_first_not_of("0123456789") == std::string::npos;
    where += index ? "[" + name + "]" : "." + name;
    at /= name;
  }
  return where;
}

}  // namespace schema_detail

// A schema parsed once, for checking many documents (a lineage's lines). problems(doc): where `doc`
// breaks it, one line per problem ("$.runs[1].o: Missing required property 'max_abs'."; a value of
// the wrong type is shown). valijson's summary lines for the enclosing objects and arrays ("Failed
// to validate ...") are left out. A schema valijson cannot parse is itself every document's problem.
class SchemaValidator {
 public:
  explicit SchemaValidator(const nlohmann::json& schema) {
    try {
      valijson::SchemaParser(valijson::SchemaParser::kDraft7)
          .populateSchema(valijson::adapters::NlohmannJsonAdapter(schema), parsed_);
    } catch (const std::exception& e) {
      unreadable_ = std::string("$: the schema cannot be read: ") + e.what();
    }
  }
  std::vector<std::string> problems(const nlohmann::json& doc) const {
    if (!unreadable_.empty()) return {unreadable_};
    valijson::Validator validator(valijson::Validator::kStrongTypes);
    valijson::ValidationResults results;
    if (validator.validate(parsed_, valijson::adapters::NlohmannJsonAdapter(doc), &results)) return {};
    std::vector<std::string> out;
    valijson::ValidationResults::Error e;
    while (results.popError(e)) {
      if (e.description.rfind("Failed to validate", 0) == 0) continue;
      nlohmann::json::json_pointer at;
      std::string line = schema_detail::path_of(e.context, at) + ": ";
      if (e.description.find("'type' constraint") != std::string::npos && doc.contains(at))
        line += doc.at(at).dump() + ": ";
      out.push_back(line + e.description);
    }
    if (out.empty()) out.push_back("$: does not follow the schema");  // only summary lines came
    return out;
  }

 private:
  valijson::Schema parsed_;
  std::string unreadable_;
};

// One document against its schema (SchemaValidator, parsed for this call).
inline std::vector<std::string> schema_problems(const nlohmann::json& schema, const nlohmann::json& doc) {
  return SchemaValidator(schema).problems(doc);
}

}  // namespace attngate::verify
