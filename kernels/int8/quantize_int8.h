// attnlab kernels: INT8 quantization on the GPU, bit for bit the reference quantizer's symmetric rules
// (core/quant/quantize.h, INT-FlashAttention §3.2): s = max|x| / 127 in FP32 (1 where that is not a normal
// number), code = ⌈x / s⌋ with ties to even, clamped to ±127. It prepares int_flash's storage format from
// FP32 tensors already on the device, so the scales the kernel reads are computed on the GPU and can be
// read back as probes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace attnlab::kernels {

// One scale per row of `cols` values: rows of `x` are grouped `group_rows` at a time, and row r's scale
// lands at scale[(r / group_rows)·scale_group_stride + r % group_rows] (K's scales are padded per head).
cudaError_t quantize_rows_int8(const float* x, int64_t rows, int cols, int64_t group_rows, int64_t scale_group_stride,
                               int8_t* q, float* scale, cudaStream_t stream);

// One scale per (batch, KV head) of V (heads × keys × d), written transposed and key-permuted into Vᵀ
// (heads × d × kv_pad, int_flash.h; padding keys stay as they are): `position_of_key[k]` (16 entries) is
// where key k of each 16-key group is stored.
cudaError_t quantize_heads_int8_vt(const float* v, int heads, int keys, int d, int kv_pad, const int* position_of_key,
                                   int8_t* vt, float* scale, cudaStream_t stream);

}  // namespace attnlab::kernels
