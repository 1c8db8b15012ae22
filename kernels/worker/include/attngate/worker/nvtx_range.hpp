// An NVTX range of domain `attngate` for the life of the object (header only, NVTX 3). The worker
// brackets every call it makes in one ("launch <kernel>", "timed <kernel> #<id>", and "profile",
// the range `attngate profile` has Nsight Compute include); the bench's judge brackets each timed
// call on its side too, so Nsight Systems shows both timelines. Without a tool attached, a push
// and a pop cost a few nanoseconds.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace attngate::worker {

class NvtxRange {
 public:
  explicit NvtxRange(const std::string& name) {
    static const nvtxDomainHandle_t domain = nvtxDomainCreateA("attngate");
    domain_ = domain;
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = name.c_str();
    nvtxDomainRangePushEx(domain_, &a);
  }
  ~NvtxRange() { nvtxDomainRangePop(domain_); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  nvtxDomainHandle_t domain_;
};

}  // namespace attngate::worker
