#include "kernels/common/tensor_map.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled

#include <optional>

namespace attnlab::kernels {

namespace {

// The driver's encoder, looked up once (CUDA 12.0's signature).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();  // not the caller's error: clear it
      return PFN_cuTensorMapEncodeTiled_v12000{nullptr};
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// The driver's swizzle mode for `bytes`, or nothing for a width it has no mode for.
std::optional<CUtensorMapSwizzle> swizzle_mode(int bytes) {
  switch (bytes) {
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 0: return CU_TENSOR_MAP_SWIZZLE_NONE;
    default: return std::nullopt;
  }
}

}  // namespace

cudaError_t tensor_map_3d(CUtensorMap& map, TensorElement element, const void* base, const uint64_t (&dims)[3],
                          uint64_t row_stride, uint64_t slab_stride, const uint32_t (&box)[3], int swizzle_bytes) {
  const std::optional<CUtensorMapSwizzle> swizzle = swizzle_mode(swizzle_bytes);
  if (!swizzle) return cudaErrorInvalidValue;
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return cudaErrorNotSupported;
  const cuuint64_t global_dims[3] = {dims[0], dims[1], dims[2]};
  const cuuint64_t strides[2] = {row_stride, slab_stride};  // dims 1 and 2, in bytes
  const cuuint32_t box_dims[3] = {box[0], box[1], box[2]};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUtensorMapDataType type = element == TensorElement::fp32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : element == TensorElement::fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                    : CU_TENSOR_MAP_DATA_TYPE_UINT8;
  const CUresult r = encode(&map, type, 3, const_cast<void*>(base), global_dims, strides,
                            box_dims, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, *swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t k8_tensor_map(CUtensorMap& map, const void* k, int64_t heads, int kv_len, int d, int tile) {
  const uint64_t n = uint64_t(kv_len), dd = uint64_t(d);
  return tensor_map_3d(map, TensorElement::byte, k, {dd, n, uint64_t(heads)}, dd, n * dd,
                       {uint32_t(d), uint32_t(tile), 1}, d);
}

cudaError_t vt8_tensor_map(CUtensorMap& map, const void* vt, int64_t heads, int kv_pad, int d, int tile) {
  const uint64_t pad = uint64_t(kv_pad), dd = uint64_t(d);
  return tensor_map_3d(map, TensorElement::byte, vt, {pad, dd, uint64_t(heads)}, pad, pad * dd,
                       {uint32_t(tile), uint32_t(d), 1}, tile);
}

cudaError_t key_scale_tensor_map(CUtensorMap& map, const float* scales, int64_t heads, int kv_pad, int tile) {
  const uint64_t pad = uint64_t(kv_pad), row = pad * sizeof(float);
  return tensor_map_3d(map, TensorElement::fp32, scales, {pad, 1, uint64_t(heads)}, row, row, {uint32_t(tile), 1, 1},
                       0);
}

cudaError_t fp16_rows_tensor_map(CUtensorMap& map, const void* v, int64_t heads, int kv_len, int d, int tile) {
  const uint64_t n = uint64_t(kv_len), dd = uint64_t(d), row = dd * 2;  // bytes per key
  return tensor_map_3d(map, TensorElement::fp16, v, {dd, n, uint64_t(heads)}, row, n * row, {64, uint32_t(tile), 1},
                       128);
}

}  // namespace attnlab::kernels
