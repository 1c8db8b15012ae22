#include "attngate/bench/harness.hpp"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include <fstream>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "attngate/bench/trace.hpp"
#include "attngate/worker/nvtx_range.hpp"
#include "attngate/cuda_check.hpp"
#include "attngate/verify/remote.hpp"
#include "attngate/worker/protocol.hpp"

namespace attngate::bench {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The input sets alternate between verification's two distributions, so the timed calls see both,
// as the checked calls do (large scores exercise the softmax's rescaling path).
Distribution set_distribution(int set) { return set % 2 == 0 ? Distribution::standard : Distribution::large_scores; }

int select_device(int device) {
  ATTNGATE_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

size_t problem_bytes(const Scenario& s) {
  const size_t e = verify::element_bytes(s.dtype);
  const size_t q = size_t(s.batch) * s.seqlen_q * s.heads_q * s.head_dim;
  const size_t kv = size_t(s.batch) * s.seqlen_k * s.heads_kv * s.head_dim;
  const size_t lse = size_t(s.batch) * s.heads_q * s.seqlen_q;
  return (2 * q + 2 * kv) * e + lse * sizeof(float);
}

}  // namespace

// The judge's interprocess events for one kernel in a worker (remote.hpp's JudgeEvents).
class IpcEventPair {
 public:
  IpcEventPair() {
    for (cudaEvent_t* e : {&go_, &done_})
      ATTNGATE_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventInterprocess | cudaEventDisableTiming));
    cudaIpcEventHandle_t h{};
    ATTNGATE_CUDA_CHECK(cudaIpcGetEventHandle(&h, go_));
    handles_.go = worker::to_hex(h);
    ATTNGATE_CUDA_CHECK(cudaIpcGetEventHandle(&h, done_));
    handles_.done = worker::to_hex(h);
  }
  ~IpcEventPair() {
    if (go_) cudaEventDestroy(go_);  // no throw from a destructor
    if (done_) cudaEventDestroy(done_);
  }
  IpcEventPair(const IpcEventPair&) = delete;
  IpcEventPair& operator=(const IpcEventPair&) = delete;
  cudaEvent_t go() const { return go_; }
  cudaEvent_t done() const { return done_; }
  const verify::remote::JudgeEvents& handles() const { return handles_; }

 private:
  cudaEvent_t go_ = nullptr, done_ = nullptr;
  verify::remote::JudgeEvents handles_;
};

struct Harness::Contestant {
  const KernelInfo* kernel = nullptr;
  verify::remote::RemoteKernel* remote = nullptr;  // set when the kernel runs in a worker
  std::vector<std::unique_ptr<verify::Problem>> inputs;
  KernelSeries series;
  std::vector<CallTrace> remote_traces;  // traced calls of the current block, from the worker
  IpcEventPair* events = nullptr;  // remote: the judge's clock around the worker's call (Harness::events_)
  std::unique_ptr<verify::DeviceSnapshot> at_stop;  // remote: the outputs when the judge's clock stopped
};

namespace {

CallTrace from_wire(const worker::WireTrace& w, uint64_t call_id) {
  CallTrace t;
  t.call_id = call_id;
  t.kernels = w.kernels;
  t.kernel_sum_ns = w.kernel_sum_ns;
  t.span_ns = w.span_ns;
  t.memcpys = w.memcpys;
  t.memsets = w.memsets;
  t.foreign_stream_kernels = w.foreign_stream_kernels;
  t.streams = w.streams;
  t.kernel_names = w.kernel_names;
  return t;
}

// The contestant whose handoff calibrates the judge's clock: `asked` if >= 0 (-1 when that kernel
// runs in this process: then no round trip is subtracted, and the kernels in workers carry it),
// else the last kernel that runs in a worker; -1 when none does.
int handoff_reference(const std::vector<bool>& remote, int asked) {
  if (asked >= 0) {
    if (size_t(asked) >= remote.size()) throw std::invalid_argument("measure: no kernel " + std::to_string(asked));
    return remote[size_t(asked)] ? asked : -1;
  }
  for (int i = int(remote.size()) - 1; i >= 0; --i)
    if (remote[size_t(i)]) return i;
  return -1;
}

// 1.4826 x the median absolute deviation: the standard deviation of normal data, robust to outliers.
double robust_sd(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double mid = median(v);
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::abs(x - mid));
  return 1.4826 * median(dev);
}

// Kernels the traced calls ran that the worker's build-time inventory does not list.
std::vector<std::string> foreign_kernels(const KernelSeries& s) {
  const std::set<std::string> own(s.inventory.begin(), s.inventory.end());
  std::set<std::string> foreign;
  for (const auto& t : s.traces)
    for (const auto& n : t.kernel_names)
      if (!own.count(n) && n != kHoldKernelName) foreign.insert(n);
  return {foreign.begin(), foreign.end()};
}

}  // namespace

Harness::Harness(int device) : device_(select_device(device)), clock_(device) {
  cudaDeviceProp prop{};
  ATTNGATE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  device_name_ = prop.name;
  device_sm_ = prop.major * 10 + prop.minor;
  // Twice the L2, so that no line of the previous call's data survives the flush.
  flush_bytes_ = 2 * uint64_t(std::max(prop.l2CacheSize, 1 << 20));
  flush_ = verify::DeviceBuffer(flush_bytes_);
  ATTNGATE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  clean_state_ = verify::read_stream_state(stream_);
  ATTNGATE_CUDA_CHECK(cudaEventCreate(&start_));
  ATTNGATE_CUDA_CHECK(cudaEventCreate(&stop_));
  ATTNGATE_CUDA_CHECK(cudaEventCreate(&pre_));
}

Harness::~Harness() {
  // No throw from a destructor.
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (pre_) cudaEventDestroy(pre_);
  if (stream_) cudaStreamDestroy(stream_);
}

void Harness::sample_clock(std::vector<ClockReading>& out) const {
  if (clock_.available()) out.push_back(clock_.read());
}

namespace {
// Tags the harness's own GPU work for this process's tracer (activity.hpp's kHarnessExternalId)
// while it lives, when a traced call is being traced here at all.
class HarnessWorkTag {
 public:
  explicit HarnessWorkTag(bool traced) : on_(traced && CuptiTracer::instance().enabled()) {
    if (on_) CuptiTracer::instance().push(kHarnessExternalId);
  }
  ~HarnessWorkTag() {
    if (!on_) return;
    try {
      CuptiTracer::instance().pop();
    } catch (const std::exception& e) {  // a destructor may not throw; the trace is then suspect
      std::cerr << "attngate_bench: " << e.what() << "\n";
    }
  }
  HarnessWorkTag(const HarnessWorkTag&) = delete;
  HarnessWorkTag& operator=(const HarnessWorkTag&) = delete;

 private:
  bool on_;
};
}  // namespace

Harness::CallTimes Harness::timed_call(Contestant& c, size_t input, bool traced, uint64_t call_id,
                                      bool device_sync, const FreshContents* fresh) {
  if (idle_ratio_ > 0 && last_event_ms_ > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(idle_ratio_ * last_event_ms_));
  // Outside the timed region: undo a persisting-L2 window or set-aside a call left behind (it would
  // keep data in L2 across the flush), drop persisting lines.
  if (!verify::describe_state_change(clean_state_, verify::read_stream_state(stream_)).empty())
    verify::reset_stream_state(stream_, clean_state_);
  ATTNGATE_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  verify::Problem& p = *c.inputs[input];
  const worker::NvtxRange range("judge " + c.kernel->name + " " + p.scenario.id + " #" + std::to_string(call_id));
  if (c.remote) return remote_call(c, p, traced, call_id, fresh);
  CuptiTracer& tracer = CuptiTracer::instance();
  {
    const HarnessWorkTag tag(traced);  // never counted as the call's (activity.hpp)
    if (fresh) p.fill(fresh->seed, fresh->distribution, stream_);
    // Every timed call starts from the poison a checked call starts from (before the flush, so the
    // poisoned lines leave L2 too).
    p.o.poison(stream_);
    p.lse.poison(stream_);
    flush_l2(call_id);
  }
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(stream_));

  hold_.hold(stream_);
  ATTNGATE_CUDA_CHECK(cudaEventRecord(start_, stream_));
  const auto t0 = Clock::now();
  if (traced) tracer.push(call_id);
  try {
    c.inputs[input]->launch(*c.kernel, stream_);
  } catch (...) {
    if (traced) tracer.pop();
    hold_.release();
    cudaDeviceSynchronize();  // already failing; the launch error is the one to report
    throw;
  }
  if (traced) tracer.pop();
  ATTNGATE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  hold_.release();
  if (device_sync) ATTNGATE_CUDA_CHECK(cudaDeviceSynchronize());
  else ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  const auto t1 = Clock::now();

  // What the call left on the harness stream or the device (undone before the next call).
  ++c.series.calls;
  const std::string left = verify::describe_state_change(clean_state_, verify::read_stream_state(stream_));
  if (!left.empty() && c.series.stream_state_changes++ == 0) c.series.stream_state = left;

  CallTimes out;
  float ms = 0;
  ATTNGATE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  out.event_ms = out.judge_ms = out.worker_event_ms = ms;
  last_event_ms_ = ms;
  out.wall_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  out.held_timeout = hold_.last_timed_out();
  return out;
}

void Harness::flush_l2(uint64_t call_id) {
  ATTNGATE_CUDA_CHECK(cudaMemsetAsync(flush_.get(), int(call_id & 0xff), flush_bytes_, stream_));
}

// The judge's clock around a call in a worker. On the judge's stream, behind its hold: the outputs
// poisoned, fresh contents written (so no earlier work could have seen them), L2 flushed, the start
// event, then the go event the worker's stream waits for; the worker's done event, the stop event
// and a snapshot of the outputs at that moment. Contexts of two processes are time-sliced, so the
// snapshot sees what the call had written when the clock stopped; anything written later is caught
// by comparing the snapshot with the outputs once the worker says it is done.
Harness::CallTimes Harness::remote_call(Contestant& c, verify::Problem& p, bool traced, uint64_t call_id,
                                       const FreshContents* fresh) {
  const auto t0 = Clock::now();
  // Everything the judge launches here is its own work: tagged for its tracer, which runs when an
  // in-process kernel shares the traced block, so that no record of it is filed as a call's.
  const HarnessWorkTag tag(traced);
  hold_.hold(stream_);
  ATTNGATE_CUDA_CHECK(cudaEventRecord(pre_, stream_));
  p.o.poison(stream_);
  p.lse.poison(stream_);
  if (fresh) p.fill(fresh->seed, fresh->distribution, stream_);
  flush_l2(call_id);
  ATTNGATE_CUDA_CHECK(cudaEventRecord(start_, stream_));
  ATTNGATE_CUDA_CHECK(cudaEventRecord(c.events->go(), stream_));
  try {
    verify::remote::begin_timed(*c.remote, p.params, c.events->handles(), traced, call_id);
  } catch (...) {
    hold_.release();
    (void)cudaStreamSynchronize(stream_);  // already failing: the worker's error is the one to report
    throw;
  }
  ATTNGATE_CUDA_CHECK(cudaStreamWaitEvent(stream_, c.events->done(), 0));
  ATTNGATE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  verify::take_snapshot(p, *c.at_stop, stream_);
  hold_.release();
  wait_for_stop(c);
  const verify::remote::TimedResult r = verify::remote::finish_timed(*c.remote);
  ++c.series.calls;
  CallTimes out;
  float judge = 0, pre = 0;
  ATTNGATE_CUDA_CHECK(cudaEventElapsedTime(&judge, start_, stop_));
  ATTNGATE_CUDA_CHECK(cudaEventElapsedTime(&pre, pre_, start_));
  out.judge_ms = judge;
  out.event_ms = judge - handoff_ms_;
  out.pre_ms = pre;
  out.worker_event_ms = r.event_ms;
  out.hold_gap_us = hold_.last_max_gap_us();
  out.held_timeout = hold_.last_timed_out();
  check_at_stop(c, p);
  out.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (traced && r.has_trace) c.remote_traces.push_back(from_wire(r.trace, call_id));
  if (!r.stream_state.empty() && c.series.stream_state_changes++ == 0) c.series.stream_state = r.stream_state;
  last_event_ms_ = out.event_ms;
  return out;
}

// The judge's stream waits for the worker's done event; a worker whose call never ends must not
// hang the judge. Past the worker timeout the worker is killed and the run ends (the stream waits
// on an event that will never come, so nothing more can be timed on it): the gate then has no
// performance.json and fails NO_PERF, or CTest reports the test's failure.
void Harness::wait_for_stop(Contestant& c) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(verify::remote::worker_timeout_s());
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream_);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) ATTNGATE_CUDA_CHECK(e);
    if (Clock::now() > deadline) {
      verify::remote::kill_worker(*c.remote);
      std::cerr << "attngate_bench: " << c.kernel->name << ": the judge's clock did not stop within "
                << verify::remote::worker_timeout_s() << " s (ATTNGATE_WORKER_TIMEOUT_S): the worker was killed and "
                << "the run ends" << std::endl;
      std::_Exit(1);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// What the judge's stop saw must be the call's whole output: nothing unwritten, nothing written later.
// The NaN count comes first and the comparison with the snapshot last, so that an output changed
// between the two still differs from what the stop saw.
void Harness::check_at_stop(Contestant& c, verify::Problem& p) {
  const int64_t unwritten = verify::count_nan_outputs(p, stream_);
  const verify::DeviceDiff late = verify::diff_from_snapshot(p, *c.at_stop, stream_);
  if (late.o > 0 || late.lse > 0)
    throw TimedRunCheckError(failure_kind::kSideStream, c.kernel->name, p.scenario.id,
                             std::to_string(late.o) + " elements of O and " + std::to_string(late.lse) +
                                 " of LSE changed after the judge's clock stopped (the worker's done event came "
                                 "before its work was finished)");
  if (unwritten > 0)
    throw TimedRunCheckError(failure_kind::kWrongOutput, c.kernel->name, p.scenario.id,
                             std::to_string(unwritten) + " elements of O and LSE still held the NaN poison when the "
                             "judge's clock stopped (a timed call that skipped work)");
}

void Harness::record_untraced(KernelSeries& k, const CallTimes& t, bool fresh) {
  k.event_ms.push_back(t.event_ms);
  k.judge_ms.push_back(t.judge_ms);
  k.worker_event_ms.push_back(t.worker_event_ms);
  k.pre_ms.push_back(t.pre_ms);
  k.wall_ms.push_back(t.wall_ms);
  k.hold_gap_max_us = std::max(k.hold_gap_max_us, t.hold_gap_us);
  k.held_timeouts += t.held_timeout;
  if (!fresh) return;
  k.fresh_event_ms.push_back(t.event_ms);
  k.fresh_judge_ms.push_back(t.judge_ms);
  k.fresh_wall_ms.push_back(t.wall_ms);
}

// The round trip to a worker (two context switches, about 0.29 ms on the H200) is in every judge
// time. It is the median, over the reference's untraced calls, of the judge's time less the
// reference worker's own event time; every worker's judge times less it are the call times the
// verdict rests on. The reference is the baseline, whose worker runs trusted code.
// A kernel in another worker has its round trip corrected within `trust_ms` (round_trip_correction).
void Harness::settle_handoff(std::vector<Contestant>& cs, const std::vector<double>& handoffs, int reference,
                             double trust_ms, Measurement& m) {
  if (handoffs.empty()) return;
  m.reference_handoff_ms = median(handoffs);
  m.judge_resolution_ms = robust_sd(handoffs);
  m.lowest_handoff_ms = solo_lowest_ms_ > 0 ? std::min(min_of(handoffs), solo_lowest_ms_) : min_of(handoffs);
  handoff_ms_ = subtracted_handoff(m.reference_handoff_ms);
  m.handoff_ms = handoff_ms_;
  m.solo_handoff_ms = solo_handoff_ms_;
  for (size_t i = 0; i < cs.size(); ++i) {
    Contestant& c = cs[i];
    if (!c.remote) continue;
    c.series.round_trip_correction_ms =
        int(i) == reference ? 0.0
                            : round_trip_correction(c.series.judge_ms, c.series.worker_event_ms,
                                                    m.reference_handoff_ms, trust_ms);
    const double subtracted = handoff_ms_ + c.series.round_trip_correction_ms;
    auto settle = [subtracted](std::vector<double>& out, const std::vector<double>& judge) {
      out.clear();
      for (double j : judge) out.push_back(j - subtracted);
    };
    settle(c.series.event_ms, c.series.judge_ms);
    settle(c.series.traced_event_ms, c.series.traced_judge_ms);
    settle(c.series.fresh_event_ms, c.series.fresh_judge_ms);
  }
}

// No figure can rest on a judge time shorter than a round trip can be (judge_clock_refusal, stats.hpp):
// the worker did not wait for the judge's go event, or the round trip moved while the call was timed.
void Harness::require_resolved(const Contestant& c, bool is_reference, const Measurement& m) const {
  const RoundTrip rt{handoff_ms_ + c.series.round_trip_correction_ms, m.lowest_handoff_ms};
  for (const auto* series : {&c.series.event_ms, &c.series.traced_event_ms, &c.series.fresh_event_ms}) {
    const ClockRefusal r = judge_clock_refusal(*series, rt);
    if (!r.refused) continue;
    throw TimedRunCheckError(
        is_reference ? failure_kind::kBaselineClock : failure_kind::kJudgeClock, c.series.kernel, m.scenario,
        std::to_string(r.calls_at_or_below_zero) + " of " + std::to_string(series->size()) +
            " calls took the judge no longer than the " + std::to_string(1e3 * rt.subtracted_ms) +
            " us round trip subtracted from every call (shortest " + std::to_string(1e3 * r.shortest_judge_ms) +
            " us; shortest round trip seen " + std::to_string(1e3 * m.lowest_handoff_ms) + " us): " +
            (is_reference ? "the baseline's round trip moved while it was timed (another context ran)"
                          : "its worker did not wait for the judge's go event, or the round trip moved"));
  }
}

// The round trip subtracted from judge times: the one measured before any other worker existed,
// where there is one (nothing another process does to the baseline's calls during the run then
// moves the call times), but never more than the baseline's own in this measurement: a round trip
// alone that was itself disturbed must not make call times shorter than the judge saw. Either
// difference is BASELINE_DISTURBED's to judge.
// One pair per kernel in a worker for the harness's life: a worker keeps every event it opened, so
// a pair made again could come back with the handle of one it already holds.
IpcEventPair& Harness::events_for(const verify::remote::RemoteKernel* k) {
  auto& pair = events_[k];
  if (!pair) pair = std::make_unique<IpcEventPair>();
  return *pair;
}

double Harness::subtracted_handoff(double reference_ms) const {
  return solo_handoff_ms_ > 0 ? std::min(solo_handoff_ms_, reference_ms) : reference_ms;
}

double Harness::calibrate_solo_handoff(const KernelInfo& k, int calls) {
  verify::remote::RemoteKernel* remote = verify::remote::find(k);
  if (!remote) return 0;
  IpcEventPair& events = events_for(remote);
  std::vector<double> judge;
  for (int i = 0; i < calls + 3; ++i) {  // 3 warm-ups
    hold_.hold(stream_);
    ATTNGATE_CUDA_CHECK(cudaEventRecord(start_, stream_));
    ATTNGATE_CUDA_CHECK(cudaEventRecord(events.go(), stream_));
    try {
      verify::remote::begin_handoff(*remote, events.handles());
    } catch (...) {
      hold_.release();
      cudaStreamSynchronize(stream_);  // already failing
      throw;
    }
    ATTNGATE_CUDA_CHECK(cudaStreamWaitEvent(stream_, events.done(), 0));
    ATTNGATE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
    hold_.release();
    ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(stream_));
    verify::remote::finish_timed(*remote);
    float ms = 0;
    ATTNGATE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    if (i >= 3) judge.push_back(ms);
  }
  solo_handoff_ms_ = median(judge);
  solo_lowest_ms_ = min_of(judge);
  return solo_handoff_ms_;
}

void Harness::check_call(Contestant& c, verify::Problem& p, const verify::DeviceTruth& truth, const char* when) {
  // A kernel in a worker is judged on what the judge's stop saw, not on its outputs now.
  const verify::DeviceErrors e = c.at_stop ? verify::snapshot_errors(p, *c.at_stop, truth, stream_, false)
                                           : verify::device_errors(p, truth, stream_);
  ++c.series.checked_calls;
  // The suite defaults' absolute bounds, as check_timed_run: loose for any verified kernel, far
  // below what a stale, skipped or partial output gives.
  verify::Judgement j = verify::judge_absolute(e.o, e.lse, Tolerance{}.of(p.scenario.dtype));
  if (j.pass) return;
  std::string reasons;
  for (const auto& r : j.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
  throw TimedRunCheckError(failure_kind::kWrongOutput, c.kernel->name, p.scenario.id,
                           std::string("a timed call chosen at random (") + when + ") was judged against the fp32 "
                           "reference: " + reasons + " (so the timed calls are not the computation verification checked)");
}

void Harness::check_timed_run(Contestant& c, const Scenario& s, const verify::DeviceTruth& truth) {
  const std::string& name = c.kernel->name;
  verify::Problem& p = *c.inputs.front();  // refilled by measure() with the contents `truth` is of
  verify::DeviceSnapshot seen = verify::make_snapshot(p);
  p.o.poison(stream_);
  p.lse.poison(stream_);
  timed_call(c, 0, false, next_call_id_++, /*device_sync=*/false);
  verify::take_snapshot(p, seen, stream_);
  const verify::DeviceErrors e = verify::snapshot_errors(p, seen, truth, stream_);
  ATTNGATE_CUDA_CHECK(cudaDeviceSynchronize());
  const verify::DeviceDiff late = verify::diff_from_snapshot(p, seen, stream_);
  if (late.o > 0 || late.lse > 0) {
    int foreign = 0;
    for (const auto& t : c.series.traces) foreign += t.foreign_stream_kernels;
    const std::string what =
        "the output read when the harness stream had finished changed after cudaDeviceSynchronize (" +
        std::to_string(late.o) + " elements of O, " + std::to_string(late.lse) +
        " of LSE): the kernel runs work on another stream, which the event timer does not see (CUPTI saw " +
        std::to_string(foreign) + " kernels on other streams in " + std::to_string(c.series.traces.size()) +
        " traced calls)";
    // When CUPTI saw the side-stream kernels, the measurement stands and carries them
    // (foreign_stream_kernels, which the gate reports as SIDE_STREAM_WORK); otherwise this check is
    // the only witness, and the measurement is void.
    if (foreign == 0) throw TimedRunCheckError(failure_kind::kSideStream, name, s.id, what);
    std::cerr << "attngate_bench: timed-run check [" << failure_kind::kSideStream << "]: " << name << " on "
              << s.id << ": " << what << std::endl;
  }
  const int64_t o_guard = p.o.guard_violations(stream_);
  const int64_t lse_guard = p.lse.guard_violations(stream_);
  // The initial kernel's absolute bounds of the suite defaults: loose enough for any kernel that
  // passes verification, far below what a stale, skipped or partial output gives.
  verify::Judgement j = verify::judge_absolute(e.o, e.lse, Tolerance{}.of(s.dtype));
  if (o_guard > 0) j.fail("O: " + std::to_string(o_guard) + " bytes written outside the output tensor");
  if (lse_guard > 0) j.fail("LSE: " + std::to_string(lse_guard) + " bytes written outside the LSE tensor");
  if (j.pass) return;
  std::string reasons;
  for (const auto& r : j.reasons) reasons += (reasons.empty() ? "" : "; ") + r;
  throw TimedRunCheckError(failure_kind::kWrongOutput, name, s.id,
                           "one more call through the timed path, on new input contents at the same pointers "
                           "(output re-poisoned), read when the harness stream had finished: " +
                               reasons + " (so the timed calls are not the computation verification checked)");
}

// One measurement's state, shared by its stages (measure() below reads them in order).
struct Harness::Run {
  Run(const Scenario& scenario, const MeasureOptions& options) : s(scenario), opt(options) {}
  const Scenario& s;
  const MeasureOptions& opt;
  Measurement m;
  std::vector<Contestant> cs;
  std::vector<std::unique_ptr<verify::Problem>> own;  // the judge's copy of every input set
  int sets = 1;
  int reference = -1;    // the contestant whose worker calibrates the round trip
  bool any_local = false;
  std::vector<size_t> order;
  size_t rotation = 0;
  int round = 0;
  // Which rounds get fresh contents, and which calls are checked, is drawn from a seed nobody can
  // read in advance; so are the fresh contents.
  std::mt19937_64 rng{std::random_device{}()};
  std::vector<ClockReading> clocks;
  std::vector<double> handoffs;  // the reference's judge time less its worker's event time, per call
  Clock::time_point t_setup = Clock::now();

  // ATTNGATE_BENCH_PHASES=1: where a scenario's time goes, on stderr (setup is most of a gate run).
  void phase(const char* name) {
    static const bool show = std::getenv("ATTNGATE_BENCH_PHASES") != nullptr;
    if (!show) return;
    const auto now = Clock::now();
    phases += std::string(" ") + name + "=" +
              std::to_string(int(std::chrono::duration<double, std::milli>(now - t_phase).count())) + "ms";
    t_phase = now;
  }
  void print_phases() const {
    if (!phases.empty()) std::cerr << "attngate_bench: phases " << s.id << ":" << phases << std::endl;
  }
  std::string phases;
  Clock::time_point t_phase = t_setup;
};

// Input sets for every kernel (each in its own pool, the same seeds), the judge's clock and stop
// snapshot for each worker, and the judge's own copy of every set.
void Harness::setup(Run& r, const std::vector<const KernelInfo*>& kernels) {
  const Scenario& s = r.s;
  r.m.scenario = s.id;
  r.m.flush_bytes = flush_bytes_;
  idle_ratio_ = r.opt.idle_ratio;
  last_event_ms_ = 0;
  r.m.untraced_block = r.opt.untraced_block;
  // As many input sets as fit in half the free memory, at most opt.input_sets.
  size_t free_bytes = 0, total_bytes = 0;
  ATTNGATE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t per_set = problem_bytes(s) * (kernels.size() + 1);  // + the judge's private copy
  r.sets = int(std::clamp<size_t>(free_bytes / 2 / std::max<size_t>(per_set, 1), 1, size_t(std::max(r.opt.input_sets, 1))));
  r.m.input_sets = r.sets;
  r.cs.resize(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    Contestant& c = r.cs[i];
    c.kernel = kernels[i];
    c.series.kernel = kernels[i]->name;
    c.remote = verify::remote::find(*kernels[i]);
    r.any_local |= c.remote == nullptr;
    if (c.remote) {
      c.series.isolated = true;
      c.series.kernel_tree_sha256 = verify::remote::kernel_tree_sha256(*c.remote);
      c.series.kernel_tree_dir = verify::remote::kernel_tree_dir(*c.remote);
      c.series.inventory = verify::remote::inventory(*c.remote);
      c.series.forbidden_symbols = verify::remote::forbidden_symbols(*c.remote);
    }
    // Each kernel's buffers in its own pool, kept from scenario to scenario: its worker maps them
    // once, and never sees another kernel's buffers.
    verify::PoolScope pool(verify::pool_for(kernels[i]->name));
    for (int set = 0; set < r.sets; ++set) {
      auto p = std::make_unique<verify::Problem>(s);
      p->fill(verify::scenario_seed(r.opt.seed, s.id, set), set_distribution(set), stream_);
      c.inputs.push_back(std::move(p));
    }
  }
  std::vector<bool> remote;
  for (auto& c : r.cs) {
    remote.push_back(c.remote != nullptr);
    if (!c.remote) continue;
    c.events = &events_for(c.remote);
    c.at_stop = std::make_unique<verify::DeviceSnapshot>(verify::make_snapshot(*c.inputs.front()));
  }
  r.reference = handoff_reference(remote, r.opt.handoff_reference);
  handoff_ms_ = 0;
  // The truths are computed from the judge's copy, in allocations no kernel is given, so no kernel
  // can change the inputs a truth is computed from.
  for (int set = 0; set < r.sets; ++set) {
    r.own.push_back(std::make_unique<verify::Problem>(s));
    r.own.back()->fill(verify::scenario_seed(r.opt.seed, s.id, set), set_distribution(set), stream_);
  }
  ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  r.order.resize(r.cs.size());
  for (size_t i = 0; i < r.order.size(); ++i) r.order[i] = i;
}

// The first launch of each kernel (without the hold: lazy module loading may synchronize with the
// device), the warm-up calls, and a first estimate of the round trip so the stopping rule sees call
// times.
void Harness::warm_up(Run& r) {
  for (auto& c : r.cs) {
    c.inputs[0]->launch(*c.kernel, stream_);
    ATTNGATE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  r.phase("first_launch");
  for (int w = 0; w < r.opt.warmups; ++w)
    for (size_t k = 0; k < r.cs.size(); ++k) {
      const CallTimes t = timed_call(r.cs[k], size_t(w % r.sets), false, next_call_id_++);
      if (int(k) == r.reference) r.handoffs.push_back(t.judge_ms - t.worker_event_ms);
    }
  if (r.reference >= 0 && !r.handoffs.empty()) handoff_ms_ = subtracted_handoff(median(r.handoffs));
  r.handoffs.clear();
  r.phase("warmup");
}

// One traced block (or, keep false, the traced warm-up): each call's CUPTI view filed with its kernel.
void Harness::traced_block(Run& r, int calls_per_kernel, bool keep) {
  CuptiTracer& tracer = CuptiTracer::instance();
  std::map<uint64_t, size_t> owner;
  std::vector<uint64_t> ids;
  for (auto& c : r.cs) c.remote_traces.clear();
  if (r.any_local) tracer.enable();
  try {
    for (int i = 0; i < calls_per_kernel; ++i) {
      for (size_t k : r.order) {
        const uint64_t id = next_call_id_++;
        const size_t set = r.rotation % size_t(r.sets);
        const FreshContents fresh{r.rng(), set_distribution(int(set))};
        const CallTimes t = timed_call(r.cs[k], set, true, id, true, &fresh);
        owner[id] = k;
        ids.push_back(id);
        if (!keep) continue;
        KernelSeries& series = r.cs[k].series;
        series.traced_event_ms.push_back(t.event_ms);
        series.traced_judge_ms.push_back(t.judge_ms);
        series.traced_wall_ms.push_back(t.wall_ms);
        series.traced_after.push_back(series.event_ms.size());
        series.held_timeouts += t.held_timeout;
      }
      ++r.rotation;
    }
  } catch (...) {
    if (r.any_local) {
      tracer.disable();
      tracer.take();
    }
    throw;
  }
  if (!keep) {
    if (r.any_local) {
      tracer.disable();
      tracer.take();
    }
    return;
  }
  for (auto& c : r.cs)
    for (auto& t : c.remote_traces) c.series.traces.push_back(std::move(t));
  if (!r.any_local) return;
  tracer.disable();
  ActivityLog log = tracer.take();
  const HarnessMarkers markers{kHoldKernelName, flush_bytes_, std::nullopt};
  for (CallTrace& t : attribute_calls(log, ids, markers, &r.m.attribution))
    r.cs[owner.at(t.call_id)].series.traces.push_back(std::move(t));
  r.m.dropped_records += tracer.dropped_records();
}

// One untraced round: every kernel once, the order alternating, on new contents; about one round
// in check_every, chosen once it is over, judged against the fp32 reference of its contents.
void Harness::untraced_round(Run& r) {
  for (size_t k = 0; k < r.order.size(); ++k) r.order[k] = (r.round % 2 == 0) ? k : r.order.size() - 1 - k;
  ++r.round;
  const size_t set = r.rotation % size_t(r.sets);
  // New contents at the same pointers, from a seed drawn now, written by the judge right before
  // its clock starts: no earlier work could have computed this output, so a kernel that caches,
  // precomputes or skips is timed honestly on every call.
  const FreshContents fresh{r.rng(), set_distribution(int(set))};
  for (size_t k : r.order) {
    const CallTimes t = timed_call(r.cs[k], set, false, next_call_id_++, true, &fresh);
    record_untraced(r.cs[k].series, t, true);
    if (int(k) == r.reference) r.handoffs.push_back(t.judge_ms - t.worker_event_ms);
  }
  if (r.opt.check_every > 0 && r.rng() % uint64_t(r.opt.check_every) == 0) {
    r.own[set]->fill(fresh.seed, fresh.distribution, stream_);
    const verify::DeviceTruth truth = verify::device_ground_truth(*r.own[set], stream_);
    for (size_t k : r.order) check_call(r.cs[k], *r.cs[k].inputs[set], truth, "a round chosen once it was over");
  }
  ++r.rotation;
}

// Untraced rounds in blocks, a traced block after each until every kernel has max_traced traced
// calls, until the stopping rule says so; other processes on the GPU counted before and after.
void Harness::interleave(Run& r) {
  std::set<int64_t> worker_pids;
  for (const auto& c : r.cs)
    if (c.remote) worker_pids.insert(verify::remote::worker_pid(*c.remote));
  r.m.gpu_processes_expected = 1 + int(worker_pids.size());
  r.m.gpu_processes = clock_.compute_processes();
  const auto t_loop = Clock::now();
  std::vector<const std::vector<double>*> resolved;
  for (auto& c : r.cs) resolved.push_back(&c.series.event_ms);
  for (;;) {
    for (int i = 0; i < r.opt.untraced_block; ++i) untraced_round(r);
    int traced_min = int(r.cs[0].series.traced_event_ms.size());
    for (const auto& c : r.cs) traced_min = std::min(traced_min, int(c.series.traced_event_ms.size()));
    if (traced_min < r.opt.max_traced) {
      traced_block(r, r.opt.traced_block, true);
      traced_min += r.opt.traced_block;
    }
    sample_clock(r.clocks);
    StopReason stop = should_stop(r.opt.stop, resolved, seconds_since(t_loop));
    if (stop == StopReason::noise_target && traced_min < r.opt.min_traced) stop = StopReason::none;
    if (stop != StopReason::none) {
      r.m.stop = stop;
      break;
    }
  }
  r.m.loop_s = seconds_since(t_loop);
  r.m.gpu_processes = std::max(r.m.gpu_processes, clock_.compute_processes());
}

// The timed calls must be the calls verification checked: one more call per kernel on new contents
// at the same pointers, from a seed no timed call used, the same for every kernel (one reference
// serves all), so a kernel that replays an earlier output, or skips calls after the first, is caught;
// then what a call left on the stream; then, last, whether the judge's clock could time each worker.
void Harness::check_run(Run& r) {
  if (r.reference >= 0) settle_handoff(r.cs, r.handoffs, r.reference, r.opt.worker_clock_trust_ms, r.m);
  r.phase("loop");
  if (r.opt.check_timed_run) {
    const uint64_t check_seed = verify::scenario_seed(r.opt.seed ^ 0xC4EC4ED0ull, r.s.id, 0);
    for (auto& c : r.cs) c.inputs.front()->fill(check_seed, Distribution::standard, stream_);
    r.own.front()->fill(check_seed, Distribution::standard, stream_);
    const verify::DeviceTruth truth = verify::device_ground_truth(*r.own.front(), stream_);
    for (auto& c : r.cs) check_timed_run(c, r.s, truth);
  }
  r.phase("check_timed_run");
  for (const auto& c : r.cs) {
    if (c.series.stream_state_changes > 0)
      throw TimedRunCheckError(failure_kind::kStreamState, c.kernel->name, r.s.id,
                               std::to_string(c.series.stream_state_changes) + " of " + std::to_string(c.series.calls) +
                                   " calls left " + c.series.stream_state +
                                   "; a launch may only enqueue work on its stream (the harness undid it before "
                                   "every timed call, so the times were not helped)");
  }
  for (size_t i = 0; i < r.cs.size(); ++i)
    if (r.reference >= 0 && r.cs[i].remote) require_resolved(r.cs[i], int(i) == r.reference, r.m);
}

// The SM clock over the measurement, each kernel's series (with the kernels its traced calls ran
// that its inventory lacks); the input sets go back to the kernels' pools.
Measurement Harness::summarize(Run& r) {
  Measurement& m = r.m;
  m.clock.available = clock_.available();
  m.clock.why = clock_.why();
  m.clock.device_max_mhz = clock_.max_sm_mhz();
  if (!r.clocks.empty()) {
    std::vector<double> mhz;
    for (const auto& c : r.clocks) {
      mhz.push_back(c.sm_mhz);
      m.clock.event_reasons |= c.event_reasons;
    }
    m.clock.samples = int(mhz.size());
    m.clock.before_mhz = mhz.front();
    m.clock.after_mhz = mhz.back();
    m.clock.median_mhz = median(mhz);
    m.clock.min_mhz = min_of(mhz);
  }
  for (auto& c : r.cs) {
    if (c.series.isolated) c.series.foreign_kernels = foreign_kernels(c.series);
    m.series.push_back(std::move(c.series));
  }
  r.cs.clear();
  r.own.clear();
  r.phase("teardown");
  r.print_phases();
  return std::move(r.m);
}

// Setup, warm-up, the interleaved rounds with their traced blocks, the checks, the summary
// (nvbench's measure_cold has the same shape).
Measurement Harness::measure(const Scenario& s, const std::vector<const KernelInfo*>& kernels,
                             const MeasureOptions& opt) {
  if (kernels.empty()) throw std::invalid_argument("measure: no kernel given");
  Run r(s, opt);
  setup(r, kernels);
  r.phase("alloc_fill");
  r.phase("truths");
  warm_up(r);
  // CUPTI's first enable initializes it (slow, and the first traced launch pays for it).
  traced_block(r, 1, false);
  CuptiTracer::instance().dropped_records();
  sample_clock(r.clocks);
  r.m.setup_s = seconds_since(r.t_setup);
  r.phase("traced_warmup");
  interleave(r);
  check_run(r);
  return summarize(r);
}

}  // namespace attngate::bench
