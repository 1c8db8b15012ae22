// Error metrics between a kernel's output and the fp32 reference, and the pass rule built on them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/scenario.hpp"

namespace attngate::verify {

struct ErrorStats {
  int64_t count = 0;
  int64_t nonfinite = 0;       // NaN/Inf in `got` where the reference is not the same infinity
  int64_t masked_mismatch = 0; // reference is -inf (fully masked row) but `got` is not, or the reverse
  double max_abs = 0.0;        // over elements where both are finite
  double rel_l2 = 0.0;         // ||got - want|| / ||want|| over finite elements
  // max |got - want| / max(1, |want|): the LSE is judged by this, since an fp32 LSE near 150 (large
  // scores) cannot be computed to better than ~1e-5 relative, whatever the summation order.
  double max_scaled = 0.0;
  int64_t worst_index = -1;    // element with the largest |got - want|
  double worst_got = 0.0, worst_want = 0.0;

  bool clean() const { return nonfinite == 0 && masked_mismatch == 0; }
};

// Compares element by element in double precision. A -inf in `want` (a fully masked LSE row) must be
// matched by -inf in `got`; any other non-finite value in `got` counts as nonfinite.
ErrorStats compare(const float* got, const float* want, int64_t n);

// "b=0 s=17 h=3 d=5" for an element of a contiguous BSHD tensor; "b=0 h=3 s=17" for LSE [B,H,S].
std::string bshd_location(int64_t index, int seqlen, int heads, int head_dim);
std::string lse_location(int64_t index, int seqlen, int heads);

struct Judgement {
  bool pass = true;
  std::vector<std::string> reasons;  // one line per violated rule, with the figures
  void fail(std::string reason) {
    pass = false;
    reasons.push_back(std::move(reason));
  }
};

// The initial kernel must meet the suite's bounds for its dtype: O by max abs error, LSE by
// max_scaled (absolute below |LSE| = 1, relative above); and no NaN/Inf, no fully masked row wrong.
Judgement judge_absolute(const ErrorStats& o, const ErrorStats& lse, const DtypeTolerance& tol);
// The bounds alone (judge_absolute without its NaN and masked-row rules): every other kernel's
// ceiling, whatever the initial kernel's error.
Judgement judge_bounds(const ErrorStats& o, const ErrorStats& lse, const DtypeTolerance& tol);

// Any other kernel: max error at most ratio x the initial kernel's on the same inputs, plus atol.
Judgement judge_against_initial(const ErrorStats& o, const ErrorStats& lse, const ErrorStats& initial_o,
                                const ErrorStats& initial_lse, double ratio, const DtypeTolerance& tol);

}  // namespace attngate::verify
