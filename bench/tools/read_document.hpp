// Reading and writing the JSON files attngate_stats works on, with errors that name the file.
#pragma once

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "attngate/bench/comparison_document.hpp"

namespace attngate::bench::tools {

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + " is not JSON: " + e.what());
  }
}

// The attngate.comparison/1 document in `path`; an error naming the file when it is not one.
inline ComparisonDocument read_comparison_file(const std::string& path) {
  try {
    return parse_comparison_document(read_json_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + " is not an attngate.comparison/1 document: " + e.what());
  }
}

// The document as JSON text, to `path` or, for "" or "-", to stdout.
inline void write_json_file(const nlohmann::json& doc, const std::string& path) {
  const std::string text = doc.dump(1) + "\n";
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream out(path);
  if (!(out << text)) throw std::runtime_error("cannot write " + path);
}

}  // namespace attngate::bench::tools
