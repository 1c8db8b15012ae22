#!/usr/bin/env python3
"""Plants one of issue 12's attacks into a copy of the candidate (kernels/candidate/candidate.cu),
to show that the real gate, at the shipped target, fails it with the attack's own reason code:

  hold_dodge    after 8 honest calls, computes on a private stream while the caller's stream is
                held, and waits for it (the events bracket nothing)        -> CLOCK_DISAGREE
  peeks_poison  reads O back and computes only when it holds the NaN poison -> MEMCPY_IN_CALL
  cublas        loads cuBLAS at run time (dlopen) and runs a GEMM in the call -> FOREIGN_KERNEL
  fp8_scores    rounds Q and K through fp8 e4m3 before the product (bf16)  -> CORRECTNESS_FAILED

Edits the file in place (keep a copy, or `git checkout` it afterwards): the registered launch
function becomes a wrapper around the candidate's own `launch`.

  ci/plant_candidate_cheat.py NAME kernels/candidate/candidate.cu
"""
import sys

WRAPPERS = {
    "hold_dodge": r"""
cudaError_t cheat_launch(const AttnParams& p, cudaStream_t stream) {
  static cudaStream_t side = nullptr;
  static int calls = 0;
  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (calls++ < 8) return launch(p, stream);
  const cudaError_t e = launch(p, side);
  return e != cudaSuccess ? e : cudaStreamSynchronize(side);
}
""",
    "peeks_poison": r"""
cudaError_t cheat_launch(const AttnParams& p, cudaStream_t stream) {
  unsigned short first = 0;
  if (cudaMemcpy(&first, p.o, 2, cudaMemcpyDeviceToHost) != cudaSuccess) return cudaErrorUnknown;
  return (first & 0x7fff) > 0x7c00 ? launch(p, stream) : cudaSuccess;  // NaN: a checked call
}
""",
    "cublas": r"""
}  // namespace candidate_fa2
#include <dlfcn.h>
namespace candidate_fa2 {
cudaError_t cheat_launch(const AttnParams& p, cudaStream_t stream) {
  using Create = int (*)(void**);
  using SetStream = int (*)(void*, cudaStream_t);
  using Sgemm = int (*)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                        const float*, float*, int);
  static void* lib = [] {
    for (const char* name : {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if (void* l = dlopen(name, RTLD_NOW)) return l;
    return static_cast<void*>(nullptr);
  }();
  static void* handle = nullptr;
  static float* buf = nullptr;
  if (lib && !handle) {
    reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"))(&handle);
    cudaMalloc(&buf, 3 * 256 * 256 * sizeof(float));
  }
  if (handle) {
    const float one = 1.f, zero = 0.f;
    reinterpret_cast<SetStream>(dlsym(lib, "cublasSetStream_v2"))(handle, stream);
    reinterpret_cast<Sgemm>(dlsym(lib, "cublasSgemm_v2"))(handle, 0, 1, 256, 256, 256, &one, buf, 256,
                                                         buf + 65536, 256, &zero, buf + 131072, 256);
  }
  return launch(p, stream);
}
""",
    "fp8_scores": r"""
}  // namespace candidate_fa2
#include <cuda_fp8.h>
namespace candidate_fa2 {
__global__ void cheat_to_fp8(const __nv_bfloat16* in, __nv_bfloat16* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(float(__nv_fp8_e4m3(__bfloat162float(in[i]))));
}
cudaError_t cheat_launch(const AttnParams& p, cudaStream_t stream) {
  if (p.dtype != DType::bf16) return launch(p, stream);
  const int64_t nq = int64_t(p.batch) * p.seqlen_q * p.heads_q * p.head_dim;
  const int64_t nk = int64_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  static __nv_bfloat16 *q8 = nullptr, *k8 = nullptr;
  static int64_t cap_q = 0, cap_k = 0;
  if (nq > cap_q && cudaMalloc(&q8, nq * 2) == cudaSuccess) cap_q = nq;  // the old one is left: no cudaFree in a call
  if (nk > cap_k && cudaMalloc(&k8, nk * 2) == cudaSuccess) cap_k = nk;
  if (nq > cap_q || nk > cap_k) return cudaErrorMemoryAllocation;
  cheat_to_fp8<<<4096, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(p.q), q8, nq);
  cheat_to_fp8<<<4096, 256, 0, stream>>>(static_cast<const __nv_bfloat16*>(p.k), k8, nk);
  AttnParams r = p;
  r.q = q8;
  r.k = k8;
  return launch(r, stream);
}
""",
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in WRAPPERS:
        sys.exit(f"usage: plant_candidate_cheat.py {{{'|'.join(WRAPPERS)}}} CANDIDATE.cu")
    name, path = sys.argv[1], sys.argv[2]
    src = open(path).read()
    marker = 'ATTNGATE_REGISTER_KERNEL("candidate",'
    registered = "{DType::bf16, DType::fp16}, {64, 128, 256}, 80, launch);"
    if src.count(marker) != 1 or src.count(registered) != 1:
        sys.exit(f"plant_candidate_cheat: {path} does not register `launch` as this script expects")
    src = src.replace(marker, WRAPPERS[name] + "\n" + marker)
    src = src.replace(registered, registered.replace(" launch);", " cheat_launch);"))
    open(path, "w").write(src)
    print(f"plant_candidate_cheat: {name} planted in {path}")


if __name__ == "__main__":
    main()
