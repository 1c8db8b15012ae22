#include "attngate/verify/remote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "attngate/cuda_check.hpp"
#include "attngate/kernel_status.hpp"
#include "attngate/verify/process.hpp"
#include "attngate/worker/sandbox.hpp"
#include "attngate/worker/symbols.hpp"

namespace attngate::verify::remote {
namespace {

// How long the judge waits for one reply before it kills the worker (a hung kernel).
double reply_timeout_s() {
  const char* v = std::getenv("ATTNGATE_WORKER_TIMEOUT_S");
  const double s = v ? std::atof(v) : 0;
  return s > 0 ? s : 60.0;
}

// ATTNGATE_SANDBOX=off runs workers unsealed (the gate then reports SANDBOX_UNAVAILABLE).
bool sandbox_wanted() {
  const char* v = std::getenv("ATTNGATE_SANDBOX");
  return !(v && std::string(v) == "off");
}

// argv of a worker's launch: attngate_sandbox beside the worker seals itself (writes only to
// `scratch`, reads and executes only the worker's folder and the system's) and execs the worker.
// Mechanisms the machine lacks are skipped (--policy warn) and reported by sandbox_status(); the
// gate's policy decides.
std::vector<std::string> launch_argv(const std::string& worker, const std::string& scratch) {
  if (!sandbox_wanted()) return {worker};
  const std::string dir = std::filesystem::path(worker).parent_path().string();
  const std::string launcher = dir + "/attngate_sandbox";
  if (::access(launcher.c_str(), X_OK) != 0)
    throw std::runtime_error("no sandbox launcher " + launcher + " beside the worker (the build makes it; "
                             "ATTNGATE_SANDBOX=off runs workers unsealed)");
  return {launcher, "--scratch", scratch, "--read", dir, "--exec", dir, "--policy", "warn", "--", worker};
}

struct Allocation {
  size_t bytes = 0;
  std::string handle;  // exported on first use
};

}  // namespace

class RemoteKernel;

class WorkerProcess {
 public:
  explicit WorkerProcess(std::string path) : path_(std::move(path)) { spawn(); }
  ~WorkerProcess() {
    if (to_ >= 0) ::close(to_);  // the worker's end of the exchange: it exits on end of input
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0) reap(nullptr);
    remove_scratch();
  }

  worker::Reply call(const worker::Request& r) {
    send(r);
    return receive();
  }

  // The two halves of call(), for a request answered twice (a timed call: enqueued, then done).
  void send(const worker::Request& r) {
    if (pid_ <= 0) restart();
    const std::string line = nlohmann::json(r).dump() + "\n";
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(to_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("the worker stopped reading");
      done += size_t(n);
    }
  }
  worker::Reply receive() { return nlohmann::json::parse(read_line()).get<worker::Reply>(); }

  const std::string& path() const { return path_; }
  int64_t pid() const { return pid_; }
  std::map<std::string, bool> opened;  // IPC handles this worker has mapped

 private:
  // Each start gets a new, empty scratch folder: nothing a worker left on disk reaches the next one.
  void make_scratch() {
    remove_scratch();
    std::string tmpl = (std::filesystem::temp_directory_path() / "attngate-worker-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    scratch_ = tmpl;
  }
  void remove_scratch() noexcept {
    if (scratch_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
    scratch_.clear();
  }

  void spawn() {
    make_scratch();
    const std::vector<std::string> args = launch_argv(path_, scratch_);
    int req[2], rep[2];
    if (::pipe2(req, O_CLOEXEC) != 0 || ::pipe2(rep, O_CLOEXEC) != 0)
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    // The worker's ends on the protocol's descriptors; the judge keeps the other two.
    process::SpawnOptions options;
    options.fds = {{req[0], worker::kRequestFd}, {rep[1], worker::kReplyFd}};
    pid_t pid = -1;
    std::string why;
    try {
      pid = process::spawn(args, options);
    } catch (const std::exception& e) {
      why = e.what();
    }
    ::close(req[0]);
    ::close(rep[1]);
    to_ = req[1];
    from_ = rep[0];
    if (pid < 0) throw std::runtime_error("cannot start worker " + path_ + ": " + why);
    pid_ = pid;
  }

  // A worker that died on one call (a crash, a hang it was killed for) is started again for the
  // next: the call that killed it was reported, and the next scenario gets a clean process.
  void restart() {
    if (to_ >= 0) ::close(to_);
    if (from_ >= 0) ::close(from_);
    to_ = from_ = -1;
    buffer_.clear();
    opened.clear();
    std::cerr << "attngate: starting worker " << path_ << " again (" << died_ << ")" << std::endl;
    spawn();
    worker::Request hello;
    hello.op = "hello";
    const worker::Reply r = call(hello);
    if (!r.ok || r.protocol != worker::kProtocolVersion) fail("the restarted worker did not answer hello");
    // The same binary, or the run judges something else under the first one's name.
    if (nlohmann::json(r.kernels) != nlohmann::json(first_hello_.kernels) ||
        r.kernel_tree_sha256 != first_hello_.kernel_tree_sha256)
      fail("the restarted worker is not the one this run started (its kernels or kernel tree hash " +
           r.kernel_tree_sha256 + " differ from " + first_hello_.kernel_tree_sha256 + "): the binary changed");
  }

 public:
  void remember_hello(const worker::Reply& r) { first_hello_ = r; }

 private:
  worker::Reply first_hello_;

  std::string read_line() {
    for (;;) {
      const auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      pollfd p{from_, POLLIN, 0};
      const int ready = ::poll(&p, 1, int(reply_timeout_s() * 1000));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        ::kill(pid_, SIGKILL);
        fail("no reply within " + std::to_string(int(reply_timeout_s())) +
             " s (ATTNGATE_WORKER_TIMEOUT_S); the worker was killed");
      }
      char chunk[65536];
      const ssize_t n = ::read(from_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("the worker closed its reply channel");
      buffer_.append(chunk, size_t(n));
    }
  }

  // Waits for the worker to end, saying how in *how. A worker that lives on must not hang the
  // judge: a second's grace to exit on its own (its status is then its own), then it is killed.
  void reap(std::string* how) {
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 100 && (done = ::waitpid(pid_, &status, WNOHANG)) == 0; ++i) ::usleep(10000);
    std::string said;
    if (done == 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      said = "; it was still running and was killed";
    } else if (done == pid_ && WIFEXITED(status)) {
      said = "; it exited with status " + std::to_string(WEXITSTATUS(status));
    } else if (done == pid_ && WIFSIGNALED(status)) {
      said = std::string("; it was killed by signal ") + strsignal(WTERMSIG(status));
    }
    if (how) *how = said;
  }

  [[noreturn]] void fail(const std::string& what) {
    std::string how;
    reap(&how);
    opened.clear();  // a dead worker holds no mapping; nothing to release
    died_ = "worker " + path_ + " (pid " + std::to_string(pid_) + "): " + what + how;
    pid_ = -1;
    throw std::runtime_error(died_);
  }

  std::string path_, scratch_;
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string buffer_, died_;
};

class RemoteKernel {
 public:
  RemoteKernel(std::shared_ptr<WorkerProcess> w, std::string name, std::string tree, std::string dir)
      : worker(std::move(w)), name(std::move(name)), tree_sha256(std::move(tree)), tree_dir(std::move(dir)) {}
  std::shared_ptr<WorkerProcess> worker;
  std::string name, tree_sha256, tree_dir;
};

namespace {

std::mutex g_mutex;  // the allocation table and the workers' handle sets
std::map<uintptr_t, Allocation>& allocations() {
  static auto* a = new std::map<uintptr_t, Allocation>;  // never destroyed: freed buffers outlive statics
  return *a;
}
std::vector<std::shared_ptr<WorkerProcess>>& workers() {
  static auto* w = new std::vector<std::shared_ptr<WorkerProcess>>;
  return *w;
}
constexpr int kSlots = 64;
std::array<RemoteKernel*, kSlots> g_slots{};
std::map<const void*, RemoteKernel*>& by_launch() {
  static auto* m = new std::map<const void*, RemoteKernel*>;
  return *m;
}

worker::BufferRef export_pointer(const void* p, WorkerProcess& w) {
  if (!p) return {};
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto& table = allocations();
  auto it = table.upper_bound(addr);
  if (it == table.begin() || addr >= std::prev(it)->first + std::prev(it)->second.bytes)
    throw std::runtime_error("a launch passed a device pointer that no tracked allocation holds: only the judge's "
                             "DeviceBuffers can be passed to a worker");
  --it;
  if (it->second.handle.empty()) {
    cudaIpcMemHandle_t h{};
    ATTNGATE_CUDA_CHECK(cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(it->first)));
    it->second.handle = worker::to_hex(h);
  }
  w.opened[it->second.handle] = true;
  return {it->second.handle, uint64_t(addr - it->first)};
}

worker::WireParams wire(const AttnParams& p, WorkerProcess& w) {
  worker::WireParams out = worker::wire_shape(p);
  out.q = export_pointer(p.q, w);
  out.k = export_pointer(p.k, w);
  out.v = export_pointer(p.v, w);
  out.o = export_pointer(p.o, w);
  out.lse = export_pointer(p.lse, w);
  return out;
}

// A reply's launch status as the registry's launch functions return it; a worker-side failure
// that is not a launch status is thrown.
cudaError_t launch_status(const RemoteKernel& k, const worker::Reply& r) {
  if (r.cuda_status == int32_t(cudaErrorNotSupported)) {
    set_unsupported_reason(r.unsupported_reason);
    return cudaErrorNotSupported;
  }
  if (r.cuda_status != 0) return cudaError_t(r.cuda_status);
  if (!r.ok) throw std::runtime_error("kernel '" + k.name + "' in worker " + k.worker->path() + ": " + r.error);
  return cudaSuccess;
}

std::string g_last_stream_state;  // of the last launch through a worker

cudaError_t forward_launch(RemoteKernel& k, const AttnParams& p, cudaStream_t st, bool profile = false) {
  // The worker's stream cannot wait for ours: what the judge enqueued (inputs, poison) must be done.
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(st));
  worker::Request r;
  r.op = "launch";
  r.kernel = k.name;
  r.params = wire(p, *k.worker);
  r.profile = profile;
  const worker::Reply reply = k.worker->call(r);
  g_last_stream_state = reply.stream_state;
  return launch_status(k, reply);
}

template <int I>
cudaError_t trampoline(const AttnParams& p, cudaStream_t st) {
  return forward_launch(*g_slots[I], p, st);
}

template <int... I>
constexpr std::array<LaunchFn, sizeof...(I)> make_trampolines(std::integer_sequence<int, I...>) {
  return {&trampoline<I>...};
}
constexpr auto kTrampolines = make_trampolines(std::make_integer_sequence<int, kSlots>{});
int g_used_slots = 0;

void register_kernel(const std::shared_ptr<WorkerProcess>& w, const worker::KernelDesc& d, const std::string& tree,
                     const std::string& dir) {
  if (g_used_slots == kSlots) throw std::runtime_error("more than 64 remote kernels");
  if (KernelRegistry::instance().find(d.name))
    throw std::runtime_error("worker " + w->path() + " offers kernel '" + d.name + "', which is already registered");
  auto* k = new RemoteKernel(w, d.name, tree, dir);  // lives as long as the registry
  const int slot = g_used_slots++;
  g_slots[size_t(slot)] = k;
  KernelInfo info;
  info.name = d.name;
  info.description = d.description + " [in worker " + w->path() + "]";
  for (int32_t t : d.dtypes) info.dtypes.push_back(DType(t));
  info.head_dims = d.head_dims;
  info.min_sm = d.min_sm;
  info.launch = kTrampolines[size_t(slot)];
  by_launch()[reinterpret_cast<const void*>(info.launch)] = k;
  KernelRegistry::instance().add(std::move(info));
}

}  // namespace

// The judge before its first worker: not dumpable and a subreaper (sandbox.hpp), and at exit every
// descendant a worker might have left is killed.
void harden_judge_once() {
  static const bool done = [] {
    sandbox::harden_judge_process();
    std::atexit([] { sandbox::kill_descendants(std::chrono::milliseconds(500)); });
    return true;
  }();
  (void)done;
}

bool sandbox_enabled() { return sandbox_wanted(); }

namespace {
std::vector<std::string>& seal_log() {
  static auto* v = new std::vector<std::string>;
  return *v;
}

// The seal as the kernel shows it for a running worker (its status file is world-readable).
std::string seal_seen(int64_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in) return "its /proc status could not be read";
  std::map<std::string, std::string> f;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto value = line.find_first_not_of(" \t", colon + 1);
    f[line.substr(0, colon)] = value == std::string::npos ? "" : line.substr(value);
  }
  std::string missing;
  auto need = [&](const char* key, const char* want) {
    if (f[key] != want) missing += std::string(missing.empty() ? "" : ", ") + key + " " + f[key] + " (want " + want + ")";
  };
  need("NoNewPrivs", "1");
  need("Seccomp", "2");
  need("CapEff", "0000000000000000");
  return missing;
}
}  // namespace

std::vector<std::string> seal_problems() { return seal_log(); }

void start_worker(const std::string& path) {
  ::signal(SIGPIPE, SIG_IGN);  // a dead worker is reported by the failed write, not by a signal
  harden_judge_once();
  auto w = std::make_shared<WorkerProcess>(path);
  worker::Request hello;
  hello.op = "hello";
  const worker::Reply r = w->call(hello);
  if (!r.ok) throw std::runtime_error("worker " + path + ": hello failed: " + r.error);
  if (r.protocol != worker::kProtocolVersion)
    throw std::runtime_error("worker " + path + " speaks protocol " + std::to_string(r.protocol) + ", the judge " +
                             std::to_string(worker::kProtocolVersion));
  w->remember_hello(r);
  if (sandbox_wanted()) seal_log().push_back(seal_seen(w->pid()).empty() ? "" : path + ": " + seal_seen(w->pid()));
  for (const auto& d : r.kernels) register_kernel(w, d, r.kernel_tree_sha256, r.kernel_tree_dir);
  workers().push_back(w);
}

std::vector<std::string> take_worker_args(int& argc, char** argv) {
  std::vector<std::string> paths;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--worker=", 0) == 0) paths.push_back(a.substr(9));
    else argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  return paths;
}

void load_workers(int& argc, char** argv) {
  for (const std::string& path : take_worker_args(argc, argv)) start_worker(path);
}

std::string take_stream_state() {
  std::string out;
  out.swap(g_last_stream_state);
  return out;
}

RemoteKernel* find(const KernelInfo& k) {
  auto it = by_launch().find(reinterpret_cast<const void*>(k.launch));
  return it == by_launch().end() ? nullptr : it->second;
}

void begin_timed(RemoteKernel& k, const AttnParams& p, const JudgeEvents& events, bool traced, uint64_t call_id) {
  worker::Request r;
  r.op = "timed";
  r.kernel = k.name;
  r.params = wire(p, *k.worker);
  r.traced = traced;
  r.call_id = call_id;
  r.go_event = events.go;
  r.done_event = events.done;
  k.worker->send(r);
  const worker::Reply enqueued = k.worker->receive();
  if (!enqueued.enqueued) {
    // The worker failed before its stream waited for the go event; its reply is the only one.
    std::string why = enqueued.error;
    if (enqueued.cuda_status != 0)
      why = std::string(cudaGetErrorName(cudaError_t(enqueued.cuda_status))) + (why.empty() ? "" : ": " + why);
    throw std::runtime_error("kernel '" + k.name + "' in worker " + k.worker->path() +
                             " could not enqueue a timed call: " + why);
  }
}

void begin_handoff(RemoteKernel& k, const JudgeEvents& events) {
  worker::Request r;
  r.op = "handoff";
  r.go_event = events.go;
  r.done_event = events.done;
  k.worker->send(r);
  const worker::Reply enqueued = k.worker->receive();
  if (!enqueued.enqueued) throw std::runtime_error("worker " + k.worker->path() + ": handoff failed: " + enqueued.error);
}

TimedResult finish_timed(RemoteKernel& k) {
  const worker::Reply reply = k.worker->receive();
  const cudaError_t e = launch_status(k, reply);
  if (e != cudaSuccess)
    throw std::runtime_error("kernel '" + k.name + "' failed to launch: " + cudaGetErrorString(e) + " (" +
                             cudaGetErrorName(e) + ")" + (reply.error.empty() ? "" : ": " + reply.error));
  return {reply.event_ms, reply.has_trace, reply.trace, reply.stream_state};
}

cudaError_t profiled_launch(RemoteKernel& k, const AttnParams& p, cudaStream_t st) {
  return forward_launch(k, p, st, true);
}

int64_t worker_pid(const RemoteKernel& k) { return k.worker->pid(); }

double worker_timeout_s() { return reply_timeout_s(); }

void kill_worker(RemoteKernel& k) noexcept {
  if (k.worker->pid() > 0) ::kill(pid_t(k.worker->pid()), SIGKILL);
}

std::vector<std::string> inventory(const RemoteKernel& k) {
  const std::string path = k.worker->path() + ".kernels";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no kernel inventory " + path + " beside the worker (the build writes it)");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}
std::vector<std::string> forbidden_symbols(const RemoteKernel& k) {
  std::vector<std::string> out;
  for (const auto& s : worker::read_forbidden_symbols(k.worker->path()))
    out.push_back(s.symbol + " (" + s.object + "): " + s.why);
  return out;
}

const std::string& kernel_tree_sha256(const RemoteKernel& k) { return k.tree_sha256; }
const std::string& kernel_tree_dir(const RemoteKernel& k) { return k.tree_dir; }

void track_allocation(void* base, size_t bytes) {
  if (!base) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  allocations()[reinterpret_cast<uintptr_t>(base)] = {bytes, {}};
}

void untrack_allocation(void* base) noexcept {
  std::string handle;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = allocations().find(reinterpret_cast<uintptr_t>(base));
    if (it == allocations().end()) return;
    handle = it->second.handle;
    allocations().erase(it);
  }
  if (handle.empty()) return;
  for (auto& w : workers()) {
    if (!w->opened.erase(handle)) continue;
    try {
      worker::Request r;
      r.op = "release";
      r.release = {handle};
      w->call(r);
    } catch (...) {
      // A dead worker holds nothing any more; the next call through it reports why it died.
    }
  }
}

}  // namespace attngate::verify::remote
