#include "attngate/kernel_status.hpp"

#include <string_view>
#include <utility>

namespace attngate {

namespace {
thread_local std::optional<std::string> t_reason;
}

void set_unsupported_reason(std::string why) {
  t_reason = why.empty() ? std::string("not supported (no reason given)") : std::move(why);
}

void clear_unsupported_reason() { t_reason.reset(); }

std::optional<std::string> take_unsupported_reason() {
  std::optional<std::string> out = std::move(t_reason);
  t_reason.reset();
  return out;
}

std::optional<std::string> unsupported_reason(const std::exception& e) {
  if (std::string_view(e.what()).find("cudaErrorNotSupported") == std::string_view::npos) return std::nullopt;
  return take_unsupported_reason();
}

}  // namespace attngate
