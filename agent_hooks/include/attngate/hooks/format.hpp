// One number formatted with a printf format ("%.3f"), for the reports' and questions' text.
#pragma once

#include <cstdio>
#include <string>

namespace attngate::hooks {

inline std::string fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace attngate::hooks
