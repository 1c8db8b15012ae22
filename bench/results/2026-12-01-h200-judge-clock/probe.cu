// Probe for the judge-side clock (issue 19): cross-process handoff through CUDA IPC events behind a
// stream hold, what another process's GPU work does to it, and the machine's sandbox facts.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                                   \
  do {                                                                                          \
    cudaError_t e_ = (x);                                                                       \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));        \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void hold_k(const volatile unsigned* rel, unsigned epoch) {
  unsigned long long t0 = gtime();
  while ((int)(*rel - epoch) < 0) {
    if (gtime() - t0 > 50000000ull) return;
    __nanosleep(200);
  }
}
__global__ void stamp_k(unsigned long long* s, int i) { s[i] = gtime(); }
// Every block spins for `ns`; block 0 stamps start and end.
__global__ void spin_k(unsigned long long ns, unsigned long long* s) {
  unsigned long long t0 = gtime();
  if (blockIdx.x == 0 && threadIdx.x == 0 && s) s[1] = t0;
  while (gtime() - t0 < ns) {
  }
  if (blockIdx.x == 0 && threadIdx.x == 0 && s) s[2] = gtime();
}
__global__ void poll_k(volatile unsigned long long* s) {  // waits for the judge's stamp s[0] to change
  unsigned long long seen = s[0];
  unsigned long long t0 = gtime();
  while (s[0] == seen && gtime() - t0 < 50000000ull) __nanosleep(100);
}
__global__ void sidespin_k() {
  unsigned long long t0 = gtime();
  while (gtime() - t0 < 20000000000ull) __nanosleep(1000);
}
__global__ void fma_k(float* out, int iters) {
  float a = threadIdx.x, b = 1.0001f;
  for (int i = 0; i < iters; ++i) a = fmaf(a, b, 0.5f);
  if (a == 12345.f) out[0] = a;
}

static void wr(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n) { perror("write"); exit(1); }
}
static void rd(int fd, void* p, size_t n) {
  size_t d = 0;
  while (d < n) {
    ssize_t r = read(fd, (char*)p + d, n - d);
    if (r <= 0) { perror("read"); exit(1); }
    d += r;
  }
}

struct Msg { int op; int blocks; long long ns; };

static int worker(int in, int out) {
  cudaIpcEventHandle_t hg, hd;
  cudaIpcMemHandle_t hm;
  rd(in, &hg, sizeof hg); rd(in, &hd, sizeof hd); rd(in, &hm, sizeof hm);
  cudaEvent_t go, done, a, b;
  CK(cudaIpcOpenEventHandle(&go, hg));
  CK(cudaIpcOpenEventHandle(&done, hd));
  unsigned long long* s = nullptr;
  CK(cudaIpcOpenMemHandle((void**)&s, hm, cudaIpcMemLazyEnablePeerAccess));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  spin_k<<<1, 1, 0, st>>>(1000, nullptr);
  CK(cudaStreamSynchronize(st));
  if (getenv("SIDE_SPIN")) {  // a persistent side-stream spinner in the worker's own context
    cudaStream_t side;
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    sidespin_k<<<1, 32, 0, side>>>();
  }
  int ready = 1;
  wr(out, &ready, sizeof ready);
  for (;;) {
    Msg m;
    rd(in, &m, sizeof m);
    if (m.op == 0) break;
    if (m.op != 3) CK(cudaStreamWaitEvent(st, go, 0));
    CK(cudaEventRecord(a, st));
    if (m.op == 2) CK(cudaEventRecord(done, st));
    if (m.op == 3) poll_k<<<1, 1, 0, st>>>(s);
    spin_k<<<m.blocks, 32, 0, st>>>(m.ns, s);
    CK(cudaEventRecord(b, st));
    if (m.op != 2) CK(cudaEventRecord(done, st));
    int enq = 1;
    wr(out, &enq, sizeof enq);
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    wr(out, &ms, sizeof ms);
  }
  return 0;
}

static double pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * (v.size() - 1) + 0.5))];
}

static void summary(const char* name, const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m += x;
  m /= v.size();
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  s = std::sqrt(s / std::max<size_t>(1, v.size() - 1));
  printf("  %-26s p05 %9.2f  p50 %9.2f  p95 %9.2f  mean %9.2f  sd %7.2f (us)\n", name, pct(v, .05), pct(v, .5),
         pct(v, .95), m, s);
}

static pid_t spawn_hog(int blocks, long long ns) {
  pid_t p = fork();
  if (p == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char b[32], n[32];
    snprintf(b, 32, "%d", blocks); snprintf(n, 32, "%lld", ns);
    execl("/proc/self/exe", "probe", "hog", b, n, (char*)nullptr);
    _exit(127);
  }
  return p;
}
static int hog_main(int blocks, long long ns) {
  {
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    for (;;) {
      spin_k<<<blocks, 32, 0, st>>>(ns, nullptr);
      CK(cudaStreamSynchronize(st));
    }
  }
  return 0;
}

static int judge(const char* self, int iters, const char* preload) {
  int req[2], rep[2];
  if (pipe(req) || pipe(rep)) return 1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(req[0], 3);
    dup2(rep[1], 4);
    if (preload) setenv("LD_PRELOAD", preload, 1);
    execl(self, self, "worker", (char*)nullptr);
    _exit(127);
  }
  close(req[0]); close(rep[1]);
  int to = req[1], from = rep[0];
  CK(cudaSetDevice(0));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t go, done, start, stop;
  CK(cudaEventCreateWithFlags(&go, cudaEventInterprocess | cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&done, cudaEventInterprocess | cudaEventDisableTiming));
  CK(cudaEventCreate(&start)); CK(cudaEventCreate(&stop));
  unsigned long long* s;
  CK(cudaMalloc(&s, 64));
  unsigned *rel_h, *rel_d;
  CK(cudaHostAlloc((void**)&rel_h, 4, cudaHostAllocMapped));
  *rel_h = 0;
  CK(cudaHostGetDevicePointer((void**)&rel_d, rel_h, 0));
  cudaIpcEventHandle_t hg, hd;
  cudaIpcMemHandle_t hm;
  CK(cudaIpcGetEventHandle(&hg, go)); CK(cudaIpcGetEventHandle(&hd, done)); CK(cudaIpcGetMemHandle(&hm, s));
  wr(to, &hg, sizeof hg); wr(to, &hd, sizeof hd); wr(to, &hm, sizeof hm);
  int ready;
  rd(from, &ready, sizeof ready);
  unsigned epoch = 0;
  struct Case { const char* name; int blocks; long long ns; bool hold; int hog_blocks; int op = 1; };
  std::vector<Case> cases = {
      {"1blk 20us hold", 1, 20000, true, 0},      {"132x32 20us hold", 132 * 16, 20000, true, 0},
      {"132x16 200us hold", 132 * 16, 200000, true, 0}, {"132x16 2ms hold", 132 * 16, 2000000, true, 0},
      {"132x16 200us NO hold", 132 * 16, 200000, false, 0},
      {"200us hold, hog 1x1 spin", 132 * 16, 200000, true, 1},
      {"200us hold, hog full spin", 132 * 16, 200000, true, 132 * 16},
      {"200us hold, EARLY done", 132 * 16, 200000, true, 0, 2},
      {"200us hold, FLAG poll no wait", 132 * 16, 200000, true, 0, 3},
  };
  if (getenv("ONLY_FIRST")) cases = {cases[2], cases[7], cases[8]};
  if (preload) cases.resize(1), iters = 5;
  for (const Case& c : cases) {
    pid_t hog = c.hog_blocks ? spawn_hog(c.hog_blocks, 50000) : 0;
    if (hog) usleep(300000);
    std::vector<double> jd, wk, diff, in_lat, out_lat, rt;
    for (int i = 0; i < iters + 5; ++i) {
      ++epoch;
      if (c.hold) hold_k<<<1, 1, 0, st>>>(rel_d, epoch);
      stamp_k<<<1, 1, 0, st>>>(s, 0);
      CK(cudaEventRecord(start, st));
      CK(cudaEventRecord(go, st));
      Msg m{c.op, c.blocks, c.ns};
      wr(to, &m, sizeof m);
      int enq;
      rd(from, &enq, sizeof enq);
      CK(cudaStreamWaitEvent(st, done, 0));
      CK(cudaEventRecord(stop, st));
      stamp_k<<<1, 1, 0, st>>>(s, 3);
      __atomic_store_n(rel_h, epoch, __ATOMIC_SEQ_CST);
      CK(cudaStreamSynchronize(st));
      float wms;
      rd(from, &wms, sizeof wms);
      float jms;
      CK(cudaEventElapsedTime(&jms, start, stop));
      unsigned long long h[4];
      CK(cudaMemcpy(h, s, 32, cudaMemcpyDeviceToHost));
      if (i < 5) continue;
      jd.push_back(jms * 1e3);
      wk.push_back(wms * 1e3);
      diff.push_back((jms - wms) * 1e3);
      in_lat.push_back((double)(long long)(h[1] - h[0]) / 1e3);
      out_lat.push_back((double)(long long)(h[3] - h[2]) / 1e3);
    }
    if (hog) { kill(hog, SIGKILL); waitpid(hog, nullptr, 0); }
    printf("%s (%d calls)\n", c.name, iters);
    summary("judge events", jd);
    summary("worker events", wk);
    summary("judge - worker", diff);
    summary("stamp go->worker start", in_lat);
    summary("stamp worker end->judge", out_lat);
  }
  Msg q{0, 0, 0};
  wr(to, &q, sizeof q);
  waitpid(pid, nullptr, 0);
  return 0;
}

static void facts() {
  printf("== facts\n");
  fflush(stdout);
  system("uname -a; cat /proc/self/status | grep -E 'CapEff|NoNewPrivs|Seccomp'; id; "
         "ls /sys/kernel/security 2>&1; cat /sys/kernel/security/lsm 2>&1; echo; "
         "cat /proc/sys/kernel/yama/ptrace_scope 2>&1; cat /proc/sys/user/max_user_namespaces 2>&1; "
         "unshare -Ur true && echo userns-ok; unshare -p -f --mount-proc true && echo pidns-ok; "
         "ls -la /dev/nvidia* 2>&1; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; "
         "ls /usr/include/seccomp.h /usr/lib/x86_64-linux-gnu/libseccomp* /usr/lib/x86_64-linux-gnu/libcap* 2>&1; "
         "grep -c LANDLOCK /usr/include/linux/landlock.h 2>&1; which bwrap nsys ncu 2>&1; nvidia-cuda-mps-control -h >/dev/null 2>&1 && echo mps-present");
  long abi = syscall(444 /*landlock_create_ruleset*/, nullptr, 0, 1u);
  printf("landlock ABI: %ld (errno %s)\n", abi, abi < 0 ? strerror(errno) : "-");
  fflush(stdout);
}

int main(int argc, char** argv) {
  if (argc > 1 && !strcmp(argv[1], "worker")) return worker(3, 4);
  if (argc > 3 && !strcmp(argv[1], "hog")) return hog_main(atoi(argv[2]), atoll(argv[3]));
  if (argc > 1 && !strcmp(argv[1], "facts")) { facts(); return 0; }
  if (argc > 2 && !strcmp(argv[1], "trace")) return judge(argv[0], 5, argv[2]);
  return judge(argv[0], argc > 1 ? atoi(argv[1]) : 300, nullptr);
}
