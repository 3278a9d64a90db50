// attnlab kernels: TMA tensor maps (tma_fill.cuh) for 8-bit codes and FP32 scales, built on the host through the
// driver's cuTensorMapEncodeTiled (reached by the runtime's entry-point query: no link against the driver
// library).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

enum class TensorElement { byte, fp32 };  // codes (E4M3, INT8) or FP32 scales

// A 3-D tensor: dims[0] the innermost (contiguous) extent in elements, row_stride and slab_stride the byte
// strides of dims 1 and 2 (multiples of 16), tiles of box[0] × box[1] × box[2] elements written with the
// `swizzle_bytes` swizzle (0, 32, 64 or 128; box[0]'s bytes at most that many). Elements outside the tensor
// read as zero. cudaErrorNotSupported where the driver has no cuTensorMapEncodeTiled, cudaErrorInvalidValue
// where it refuses the description (alignment, strides, box).
cudaError_t tensor_map_3d(CUtensorMap& map, TensorElement element, const void* base, const uint64_t (&dims)[3],
                          uint64_t row_stride, uint64_t slab_stride, const uint32_t (&box)[3], int swizzle_bytes);

// The E4M3 K and Vᵀ of the FP8 prefill kernels (flash3_fp8, fireq's FP8 mode) in tiles of `tile` keys:
// K as (d bytes, kv_len rows, heads) with the d-byte swizzle of the kernels' K slots, Vᵀ as (kv_pad keys, d rows,
// heads) with the 128-byte swizzle (tile = 128 keys). Rows of K past kv_len and keys past kv_pad read as zero,
// as the cp.async copiers leave them.
cudaError_t fp8_kv_tensor_maps(CUtensorMap& k_map, CUtensorMap& vt_map, const uint8_t* k, const uint8_t* vt,
                               int64_t heads, int kv_len, int kv_pad, int d, int tile);

}  // namespace attnlab::kernels
