// attnlab kernels: TMA tensor maps (tma_fill.cuh) for 8-bit codes, FP16 values and FP32 scales, built on the host
// through the driver's cuTensorMapEncodeTiled (reached by the runtime's entry-point query: no link against the driver
// library).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

enum class TensorElement { byte, fp16, fp32 };  // codes (E4M3, INT8), FP16 values, or FP32 scales

// A 3-D tensor: dims[0] the innermost (contiguous) extent in elements, row_stride and slab_stride the byte
// strides of dims 1 and 2 (multiples of 16), tiles of box[0] × box[1] × box[2] elements written with the
// `swizzle_bytes` swizzle (0, 32, 64 or 128; box[0]'s bytes at most that many). Elements outside the tensor
// read as zero. cudaErrorNotSupported where the driver has no cuTensorMapEncodeTiled, cudaErrorInvalidValue
// where it refuses the description (alignment, strides, box).
cudaError_t tensor_map_3d(CUtensorMap& map, TensorElement element, const void* base, const uint64_t (&dims)[3],
                          uint64_t row_stride, uint64_t slab_stride, const uint32_t (&box)[3], int swizzle_bytes);

// The 8-bit K of the prefill kernels (E4M3: flash3_fp8, fireq's FP8 mode; INT8: int_flash), stored (heads,
// kv_len, d), in tiles of `tile` rows with the d-byte swizzle of the kernels' K slots. Rows past kv_len read as
// zero, as the cp.async copiers leave them.
cudaError_t k8_tensor_map(CUtensorMap& map, const void* k, int64_t heads, int kv_len, int d, int tile);

// Their 8-bit Vᵀ, stored (heads, d, kv_pad), in tiles of d rows × `tile` keys with the `tile`-byte swizzle: one
// swizzle row per channel (128 keys: the 128-byte swizzle of int_flash, flash3_fp8 and fireq; 64: turbo's 64-byte
// one). Keys past kv_pad read as zero.
cudaError_t vt8_tensor_map(CUtensorMap& map, const void* vt, int64_t heads, int kv_pad, int d, int tile);

// One FP32 scale per key (fireq's fl(β_K·τ), int_flash's s_K), stored (heads, kv_pad), in tiles of `tile` keys with
// no swizzle; keys past kv_pad read as zero, as the cp.async copies leave them.
cudaError_t key_scale_tensor_map(CUtensorMap& map, const float* scales, int64_t heads, int kv_pad, int tile);

// FP16 K or V (heads, kv_len, d) in tiles of `tile` keys × 64 channels with the 128-byte swizzle: one load per
// 64-channel column block of the kernels' slots (wgmma.cuh's layout: K-major K, MN-major V; int_flash's FP16 V,
// flash2's K and V). Rows past kv_len read as zero.
cudaError_t fp16_rows_tensor_map(CUtensorMap& map, const void* v, int64_t heads, int kv_len, int d, int tile);

}  // namespace attnlab::kernels
