// How the cudnn kernel maps one attngate problem onto cuDNN's SDPA, without cuDNN: what cuDNN is
// asked to compute, what attngate fills in itself, and the key its built graph is cached under.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attngate/params.hpp"

namespace attngate::cudnn_sdpa {

struct Plan {
  std::string unsupported;  // non-empty: declined before cuDNN is asked (the reason)
  // Causal with seqlen_q > seqlen_k: the first seqlen_q - seqlen_k query rows see no key. cuDNN's
  // bottom-right mask rejects seqlen_q > seqlen_k ("virtually slice the Q tensor"), so cuDNN gets
  // only the last seqlen_k rows (a square causal problem) and attngate writes O = 0, LSE = -inf
  // into the masked rows itself (masked_rows.cu).
  int masked_rows = 0;
  int64_t q_offset = 0, o_offset = 0, lse_offset = 0;  // elements: where cuDNN's Q, O, LSE start
  int seqlen_q = 0;            // query rows cuDNN computes
  bool causal = false;         // cuDNN gets a causal mask
  bool bottom_right = false;   // aligned bottom-right; false when cuDNN's problem is square, where
                               // top-left is the same mask and what PyTorch asks cuDNN for
};

Plan make_plan(const AttnParams& p);

// Why cuDNN cannot take these pointers (TMA wants 16-byte aligned Q, K, V, O), or "".
std::string pointer_problem(const AttnParams& p, const Plan& plan);

// The alignment (4, 8 or 16 bytes) of the LSE rows cuDNN writes to: of the first one's address and
// of the batch and head strides in bytes. cuDNN assumes 16 unless told otherwise, and attngate's
// LSE need not be (verify's guard zone before it is seqlen_q * 4 bytes long for seqlen_q > 1024,
// the head stride is seqlen_q * 4 bytes, masked rows shift the start by 4 bytes a row), so the
// graph declares this.
int lse_alignment(const AttnParams& p, const Plan& plan);

// Everything of `p` but its pointers, the device, and the LSE alignment: graphs are cached under it.
std::vector<int64_t> cache_key(const AttnParams& p, int device, int lse_align);

}  // namespace attngate::cudnn_sdpa
