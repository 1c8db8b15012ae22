#pragma once
// report.md: the gate report for a person, rendered from the typed report (nothing is read back
// from report.json).
#include <string>

#include "attngate/gate/report.hpp"

namespace attngate::hooks {

std::string render_markdown(const GateReport& r);

}  // namespace attngate::hooks
