// Reads a YAML file for agent_hooks' settings (questions, supervisor thresholds), turning
// yaml-cpp's errors into "file:line: message".
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace attngate::hooks {

inline YAML::Node load_yaml_file(const std::filesystem::path& file) {
  try {
    return YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw std::runtime_error("cannot read " + file.string());
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(file.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

}  // namespace attngate::hooks
