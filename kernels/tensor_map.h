// attnlab kernels: TMA tensor maps (tma_fill.cuh) for 8-bit codes, built on the host through the driver's
// cuTensorMapEncodeTiled (reached by the runtime's entry-point query: no link against the driver library).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

// A 3-D tensor of bytes (E4M3 or INT8 codes): dims[0] the innermost (contiguous) extent, row_stride and
// slab_stride the byte strides of dims 1 and 2 (multiples of 16), tiles of box[0] × box[1] × box[2] written
// with the `swizzle_bytes` swizzle (0, 64 or 128; box[0] at most that many bytes). Elements outside the tensor
// read as zero. cudaErrorNotSupported where the driver has no cuTensorMapEncodeTiled, cudaErrorInvalidValue
// where it refuses the description (alignment, strides, box).
cudaError_t byte_tensor_map_3d(CUtensorMap& map, const void* base, const uint64_t (&dims)[3], uint64_t row_stride,
                               uint64_t slab_stride, const uint32_t (&box)[3], int swizzle_bytes);

}  // namespace attnlab::kernels
