#include "attngate/verify/metrics.hpp"
#include <fmt/printf.h>


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace attngate::verify {

ErrorStats compare(const float* got, const float* want, int64_t n) {
  ErrorStats s;
  s.count = n;
  double diff2 = 0.0, ref2 = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float g = got[i], w = want[i];
    const bool w_masked = std::isinf(w) && w < 0;
    const bool g_masked = std::isinf(g) && g < 0;
    if (w_masked || g_masked) {
      if (w_masked != g_masked) {
        if (std::isfinite(g) || g_masked) ++s.masked_mismatch; else ++s.nonfinite;
      }
      continue;
    }
    if (!std::isfinite(g)) {
      ++s.nonfinite;
      continue;
    }
    const double d = std::fabs(static_cast<double>(g) - static_cast<double>(w));
    s.max_scaled = std::max(s.max_scaled, d / std::max(1.0, std::fabs(static_cast<double>(w))));
    diff2 += d * d;
    ref2 += static_cast<double>(w) * w;
    if (d > s.max_abs || s.worst_index < 0) {
      s.max_abs = d;
      s.worst_index = i;
      s.worst_got = g;
      s.worst_want = w;
    }
  }
  s.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return s;
}

std::string bshd_location(int64_t index, int seqlen, int heads, int head_dim) {
  if (index < 0) return "-";
  const int64_t d = index % head_dim, h = (index / head_dim) % heads,
                s = (index / head_dim / heads) % seqlen, b = index / head_dim / heads / seqlen;
  std::ostringstream os;
  os << "b=" << b << " s=" << s << " h=" << h << " d=" << d;
  return os.str();
}

std::string lse_location(int64_t index, int seqlen, int heads) {
  if (index < 0) return "-";
  const int64_t s = index % seqlen, h = (index / seqlen) % heads, b = index / seqlen / heads;
  std::ostringstream os;
  os << "b=" << b << " h=" << h << " s=" << s;
  return os.str();
}

namespace {

void judge_clean(Judgement& j, const char* what, const ErrorStats& s) {
  if (s.nonfinite > 0)
    j.fail(std::string(what) + ": " + std::to_string(s.nonfinite) + " NaN/Inf values");
  if (s.masked_mismatch > 0)
    j.fail(std::string(what) + ": " + std::to_string(s.masked_mismatch) +
           " elements disagree on fully masked rows (-inf expected exactly there)");
}

}  // namespace

Judgement judge_bounds(const ErrorStats& o, const ErrorStats& lse, const DtypeTolerance& tol) {
  Judgement j;
  if (o.max_abs > tol.initial_o_max_abs)
    j.fail(fmt::format("O: max abs error {:.3g} exceeds the absolute bound {:.3g}", o.max_abs, tol.initial_o_max_abs));
  if (lse.max_scaled > tol.initial_lse_max_abs)
    j.fail(fmt::format("LSE: max error {:.3g} (scaled by max(1,|LSE|)) exceeds the bound {:.3g}", lse.max_scaled,
               tol.initial_lse_max_abs));
  return j;
}

Judgement judge_absolute(const ErrorStats& o, const ErrorStats& lse, const DtypeTolerance& tol) {
  Judgement j;
  judge_clean(j, "O", o);
  judge_clean(j, "LSE", lse);
  for (auto& r : judge_bounds(o, lse, tol).reasons) j.fail(std::move(r));
  return j;
}

Judgement judge_against_initial(const ErrorStats& o, const ErrorStats& lse, const ErrorStats& initial_o,
                                const ErrorStats& initial_lse, double ratio, const DtypeTolerance& tol) {
  Judgement j;
  judge_clean(j, "O", o);
  judge_clean(j, "LSE", lse);
  const double o_limit = ratio * initial_o.max_abs + tol.o_atol;
  if (o.max_abs > o_limit)
    j.fail(fmt::format("O: max abs error {:.3g} exceeds {:.3g} (", o.max_abs, o_limit) + std::to_string(ratio) +
           " x initial's " + fmt::format("{:.3g} + atol {:.3g})", initial_o.max_abs, tol.o_atol));
  const double lse_limit = ratio * initial_lse.max_scaled + tol.lse_atol;
  if (lse.max_scaled > lse_limit)
    j.fail(fmt::format("LSE: max error {:.3g} (scaled by max(1,|LSE|)) exceeds {:.3g} (", lse.max_scaled, lse_limit) +
           std::to_string(ratio) + " x initial's " + fmt::format("{:.3g} + atol {:.3g})", initial_lse.max_scaled, tol.lse_atol));
  return j;
}

}  // namespace attngate::verify
