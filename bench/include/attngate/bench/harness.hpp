// The measurement engine: times one or several kernels on one scenario, interleaved, with L2
// flushes, input rotation, untraced and CUPTI-traced blocks, and a noise-driven stopping rule.
// bench/README.md states the method.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attngate/bench/failure_kind.hpp"
#include "attngate/bench/sm_clock.hpp"
#include "attngate/bench/stats.hpp"
#include "attngate/bench/stream_hold.hpp"
#include "attngate/bench/trace.hpp"
#include "attngate/registry.hpp"
#include "attngate/scenario.hpp"
#include "attngate/verify/device_check.hpp"
#include "attngate/verify/problem.hpp"
#include "attngate/verify/verify_case.hpp"

namespace attngate::verify::remote {
class RemoteKernel;
}

namespace attngate::bench {

class IpcEventPair;  // harness.cpp: the judge's interprocess events around one worker's calls

// Raised by Harness::measure when a kernel's timed calls are not what verification checked
// (bench/README.md, "Checks of the timed run"). what() is
//   "timed-run check [<kind>]: <kernel> on <scenario>: <what happened>"
// with <kind> one of failure_kind.hpp's checks of the timed calls (wrong output ... baseline clock).
class TimedRunCheckError : public std::runtime_error {
 public:
  TimedRunCheckError(const std::string& kind, const std::string& kernel, const std::string& scenario,
                     const std::string& what)
      : std::runtime_error("timed-run check [" + kind + "]: " + kernel + " on " + scenario + ": " + what), kind_(kind) {}
  const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
};

struct MeasureOptions {
  StopRule stop;
  int warmups = 3;          // untraced calls per kernel before measuring
  int untraced_block = 10;  // calls per kernel in one untraced block
  int traced_block = 2;     // calls per kernel in one traced block
  int min_traced = 4;       // traced calls per kernel required before stopping on noise
  int max_traced = 16;      // no more traced blocks once every kernel has this many
  int input_sets = 3;       // input sets rotated through, fewer when memory is short; even sets draw
                            // verification's `standard` inputs, odd ones `large_scores`
  uint64_t seed = 0x5EEDu;  // base seed of the input sets (verify::scenario_seed)
  // After measuring, one more call per kernel through the timed path on new input contents at the
  // same pointers, read when the harness stream finishes and checked against the fp32 reference.
  bool check_timed_run = true;
  // Before each timed call the GPU idles this many times the previous call's event time. Back to
  // back, cuDNN-class kernels drew the H200 into its 700 W power cap (SM clock down to 1.7 GHz,
  // times up to 8% longer and bimodal); at most 2/3 of the time busy, they ran at 1980 MHz.
  double idle_ratio = 0.5;
  // Every timed call is on new contents (same pointers, a seed drawn per round), written by the judge
  // right before its clock starts; about one round in `check_every`, chosen once it is over, is
  // compared with the fp32 reference. The choices come from a seed nobody can read in advance
  // (std::random_device).
  int check_every = 8;
  // The kernel whose worker's event times calibrate the round trip to the workers (its index in the
  // kernels measured; a kernel in this process: no round trip is subtracted); -1: the last kernel
  // that runs in a worker. A comparison names its baseline.
  int handoff_reference = -1;
  // How far the judge's clock of a kernel in another worker may move towards that worker's own word
  // about its round trip (round_trip_correction, stats.hpp); 0: not at all. gate.yaml's
  // worker_clock_trust_us.
  double worker_clock_trust_ms = 0;
};

// New input contents for one timed call, written by the judge inside the call's pre-phase.
struct FreshContents {
  uint64_t seed = 0;
  Distribution distribution = Distribution::standard;
};

// One kernel's samples, in call order.
struct KernelSeries {
  std::string kernel;
  // untraced: the judge's clock, the figure the verdict rests on. In-process: CUDA events around
  // the call on the harness stream. In a worker: the judge's events around the worker's call
  // (judge_ms) less the round trip to the workers (Measurement::handoff_ms).
  std::vector<double> event_ms;
  std::vector<double> judge_ms;         // untraced, in a worker: the judge's events, round trip included
  std::vector<double> worker_event_ms;  // untraced: the worker's own events (its word; diagnostics)
  std::vector<double> pre_ms;           // untraced, in a worker: the judge's work before its clock starts
  std::vector<double> wall_ms;   // untraced: host clock from launch to cudaDeviceSynchronize
  double hold_gap_max_us = 0;    // longest poll gap of the judge's hold kernel: another context ran
  std::vector<double> traced_event_ms;
  std::vector<double> traced_judge_ms;
  std::vector<double> traced_wall_ms;
  std::vector<size_t> traced_after;  // per traced call: untraced calls of this kernel before it
  std::vector<CallTrace> traces;  // traced calls, CUPTI's view
  int held_timeouts = 0;          // calls whose launch blocked until the stream hold timed out
  int calls = 0;                  // every call through the timed path, warm-up included
  int stream_state_changes = 0;   // calls that left a persisting-L2 window or limit behind (undone)
  std::string stream_state;       // what the first such call left, in words
  // A kernel in a worker process (kernels/worker): event times and traces are the worker's word,
  // wall times the judge's clock around the whole call, the judge's check of the output included.
  bool isolated = false;
  std::string kernel_tree_sha256;             // embedded in the worker when it was built
  std::string kernel_tree_dir;                // the folder it hashed, relative to the repository
  std::vector<std::string> inventory;         // kernels the worker's library defines (build time)
  std::vector<std::string> foreign_kernels;   // kernels its traced calls ran that the inventory lacks
  std::vector<std::string> forbidden_symbols; // what its library defines that it must not (build time)
  // Calls right after the judge gave their input set new contents (each also checked), and the
  // calls whose output the judge checked against the fp32 reference.
  std::vector<double> fresh_event_ms, fresh_judge_ms, fresh_wall_ms;
  int checked_calls = 0;
  double round_trip_correction_ms = 0;  // subtracted beside the round trip (round_trip_correction)
};

struct ClockSummary {
  bool available = false;
  std::string why;  // when not available
  int samples = 0;
  double before_mhz = 0;  // right after warm-up
  double after_mhz = 0;   // after the last call
  double median_mhz = 0;
  double min_mhz = 0;
  double device_max_mhz = 0;
  uint64_t event_reasons = 0;  // OR of NVML clocks-event reason bits over the samples
};

struct Measurement {
  std::string scenario;
  std::vector<KernelSeries> series;  // one per kernel, in the order given
  StopReason stop = StopReason::none;
  double loop_s = 0;   // measuring loop, warm-up and setup excluded
  double setup_s = 0;  // allocation, input fill, warm-up
  int input_sets = 0;
  int untraced_block = 0;  // calls per kernel in an untraced block
  uint64_t flush_bytes = 0;
  ClockSummary clock;
  // CUDA processes on the device, the most seen at the start and end of measuring (-1: unknown),
  // and how many the measurement itself accounts for (the judge and its distinct workers).
  int gpu_processes = -1;
  int gpu_processes_expected = 1;
  AttributionStats attribution;
  uint64_t dropped_records = 0;
  // The judge's clock for kernels in workers: the round trip it subtracts and the spread of that
  // round trip per call (its resolution), both from the reference kernel's calls; 0 when no kernel
  // ran in a worker.
  double handoff_ms = 0;
  double judge_resolution_ms = 0;
  double reference_handoff_ms = 0;  // the reference's own median round trip in this measurement
  double lowest_handoff_ms = 0;     // the shortest round trip the judge saw: the reference's, or alone
  double solo_handoff_ms = 0;       // Harness::calibrate_solo_handoff's, 0 when not measured
};

class Harness {
 public:
  explicit Harness(int device);
  ~Harness();
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;

  // Kernels are measured interleaved, in alternating order (ABAB.. then BABA..), each on its own
  // input sets; the same kernel may appear twice (A/A), with separate buffers.
  Measurement measure(const Scenario& s, const std::vector<const KernelInfo*>& kernels, const MeasureOptions& opt);

  const std::string& device_name() const { return device_name_; }
  int device_sm() const { return device_sm_; }
  uint64_t flush_bytes() const { return flush_bytes_; }
  const SmClock& clock() const { return clock_; }
  // The round trip to k's worker with no call in it, measured `calls` times; meant for the
  // baseline's worker before any other worker exists (bench/README.md, "The judge's clock"). Later
  // measurements subtract it, and report the baseline's own round trip beside it
  // (BASELINE_DISTURBED). Returns 0 (and calibrates nothing) when k runs in this process.
  double calibrate_solo_handoff(const KernelInfo& k, int calls);

 private:
  struct Contestant;
  struct Run;  // one measurement's state (harness.cpp)
  void setup(Run& r, const std::vector<const KernelInfo*>& kernels);
  void warm_up(Run& r);
  void traced_block(Run& r, int calls_per_kernel, bool keep);
  void untraced_round(Run& r);
  void interleave(Run& r);
  void check_run(Run& r);
  Measurement summarize(Run& r);
  struct CallTimes {
    double event_ms = 0;         // the verdict's clock (judge_ms less the round trip, in a worker)
    double judge_ms = 0;         // the judge's events around the call
    double worker_event_ms = 0;  // the worker's own events (in-process: event_ms)
    double pre_ms = 0;           // the judge's poison, fill and flush before its clock starts
    double hold_gap_us = 0;
    double wall_ms = 0;
    bool held_timeout = false;
  };
  // `device_sync` false: wait for the harness stream only (the check of the timed run reads the
  // output then, as a caller synchronizing its stream would).
  // `fresh`: new contents for the input set, written before the clock starts.
  CallTimes timed_call(Contestant& c, size_t input, bool traced, uint64_t call_id, bool device_sync = true,
                       const FreshContents* fresh = nullptr);
  // The same call of a kernel that runs in a worker: the wall clock runs from the request to the end
  // of the judge's own count of unwritten outputs, so work the worker leaves running is either in
  // the time or caught as unwritten.
  CallTimes remote_call(Contestant& c, verify::Problem& p, bool traced, uint64_t call_id, const FreshContents* fresh);
  void check_at_stop(Contestant& c, verify::Problem& p);
  void wait_for_stop(Contestant& c);
  void flush_l2(uint64_t call_id);
  static void record_untraced(KernelSeries& k, const CallTimes& t, bool fresh);
  void settle_handoff(std::vector<Contestant>& cs, const std::vector<double>& handoffs, int reference,
                      double trust_ms, Measurement& m);
  void require_resolved(const Contestant& c, bool is_reference, const Measurement& m) const;
  double subtracted_handoff(double reference_ms) const;
  IpcEventPair& events_for(const verify::remote::RemoteKernel* k);
  // Checks one call's output against the fp32 reference of its input set, on the device.
  void check_call(Contestant& c, verify::Problem& p, const verify::DeviceTruth& truth, const char* when);
  // One more call of c's kernel through the timed path on its first input set, which holds the
  // contents `truth` was computed from; throws TimedRunCheckError when the output is not right.
  void check_timed_run(Contestant& c, const Scenario& s, const verify::DeviceTruth& truth);
  void sample_clock(std::vector<ClockReading>& out) const;

  int device_ = 0;
  std::string device_name_;
  int device_sm_ = 0;
  cudaStream_t stream_ = nullptr;
  verify::StreamState clean_state_;  // the harness stream and device as set up, before any kernel
  cudaEvent_t start_ = nullptr, stop_ = nullptr, pre_ = nullptr;
  uint64_t flush_bytes_ = 0;
  verify::DeviceBuffer flush_;
  StreamHold hold_;
  SmClock clock_;
  uint64_t next_call_id_ = 1;
  double idle_ratio_ = 0;    // MeasureOptions::idle_ratio of the current measurement
  double last_event_ms_ = 0; // the previous timed call's event time
  double handoff_ms_ = 0;    // the round trip subtracted from judge times (settle_handoff)
  double solo_handoff_ms_ = 0;  // calibrate_solo_handoff's median
  double solo_lowest_ms_ = 0;   // ... and shortest
  std::map<const verify::remote::RemoteKernel*, std::unique_ptr<IpcEventPair>> events_;  // per kernel in a worker
};

}  // namespace attngate::bench
