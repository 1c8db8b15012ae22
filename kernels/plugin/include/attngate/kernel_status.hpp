// Why a kernel declined a problem. A launch function handed a problem outside what it supports (a
// shape its library rejects, found only when it tries) returns cudaErrorNotSupported and records
// the reason here, for the calling thread. Harnesses report such a case as SKIPPED with the reason:
// never as passed, and never as a failure of the kernel.
#pragma once

#include <exception>
#include <optional>
#include <string>

namespace attngate {

// Called by launch functions: set just before returning cudaErrorNotSupported, and cleared on entry
// so that no reason outlives the launch that gave it.
void set_unsupported_reason(std::string why);
void clear_unsupported_reason();

// The reason the last launch on this thread recorded, or nullopt; takes it (clears it).
std::optional<std::string> take_unsupported_reason();

// For a harness's catch block around verify::Problem::launch: the recorded reason when `e` reports
// cudaErrorNotSupported (Problem::launch's message names the error), else nullopt. Takes it.
std::optional<std::string> unsupported_reason(const std::exception& e);

}  // namespace attngate
