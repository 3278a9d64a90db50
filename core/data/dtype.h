// attnlab data: the element types a Q/K/V file may store. Every loaded value becomes an FP32 in a
// Tensor; F16 and BF16 are decoded exactly (each of their values is an FP32 value).
#pragma once

#include <cstdint>

namespace attnlab::data {

enum class Dtype { f32, f16, bf16 };

inline uint64_t dtype_size(Dtype d) { return d == Dtype::f32 ? 4 : 2; }

// The safetensors spelling, also used in messages.
inline const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::f32:
      return "F32";
    case Dtype::f16:
      return "F16";
    case Dtype::bf16:
      return "BF16";
  }
  return "?";
}

}  // namespace attnlab::data
