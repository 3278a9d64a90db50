// attnlab kernels: GPU memory as an input limit. A problem too large for the GPU is bad input (exit 2),
// refused before anything is launched and named with the bytes it needs and the bytes the GPU has free
// (issue: "a problem that does not fit in GPU memory is refused before launch").
#pragma once

#include "core/config.h"

#include <cstddef>
#include <string>

namespace attnlab::kernels {

// The least device memory any kernel of variant v needs for problem p, in bytes: Q and O in FP16, the
// logsumexp in FP32 and the variant's stored K/V as its storage declaration counts them (core/storage.h:
// the FP16 K and V for flash2, the compressed cache for turbo and kivi). Every kernel backend holds at
// least this much at once, so a problem above it cannot run; the rotating timing copies come on top and
// are sized to the memory left (timing.h: input_copies). A problem split across GPUs (p.gpus > 1): the most one GPU of
// the ring holds (cp::rank_device_bytes), which is what must fit on each.
double least_device_bytes(const Problem& p, const VariantRequest& v);

// Throws InputError "<who>: needs at least X GiB of GPU memory, the GPU has Y GiB free (of Z GiB)" when
// `bytes` exceeds the free memory now.
void check_device_memory(double bytes, const std::string& who);

// The message of a failed allocation of `bytes`: what was asked and what the GPU has free.
std::string allocation_refusal(size_t bytes);

}  // namespace attnlab::kernels
