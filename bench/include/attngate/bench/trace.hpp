#pragma once
// The CUPTI tracer and record attribution the judge shares with the worker (kernels/worker owns
// them: a worker traces its own calls with the same code), named in bench's namespace.
#include "attngate/worker/activity.hpp"
#include "attngate/worker/cupti_tracer.hpp"

namespace attngate::bench {
using worker::ActivityLog;
using worker::ActivityRecord;
using worker::attribute_calls;
using worker::AttributionStats;
using worker::CallTrace;
using worker::CuptiTracer;
using worker::HarnessMarkers;
using worker::ingest;
using worker::kHarnessExternalId;
using worker::RecordKind;
using worker::short_kernel_name;
}  // namespace attngate::bench
