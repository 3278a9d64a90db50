// attnlab kernels: a ring shard's chunk as parts laid end to end, each starting 256-byte aligned (TMA needs 16; 256
// keeps every part on its own cache lines) — how every compressed ring's pack_shard lays out what it sends.
#pragma once

#include "kernels/common/vt_permutation.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace attnlab::kernels {

inline constexpr size_t kShardPartAlign = 256;

constexpr size_t align_part(size_t bytes) { return (bytes + kShardPartAlign - 1) / kShardPartAlign * kShardPartAlign; }

// Room for `count` T's, zeroed, at the next aligned offset of `out` (which grows by whole aligned parts).
template <class T>
T* grow_part(std::vector<std::byte>& out, size_t count) {
  const size_t at = align_part(out.size());
  out.resize(at + align_part(count * sizeof(T)));
  return reinterpret_cast<T*>(out.data() + at);
}

// `count` elements of each of `rows` rows of `from` (row stride `from_stride`, the run starting at `from_at` in each
// row) into `to`, back to back: a chunk's tokens of every head out of the whole sequence's array.
template <class T>
void copy_rows(T* to, const std::vector<T>& from, int64_t rows, int64_t from_stride, int64_t from_at, int64_t count) {
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(to + r * count, from.data() + r * from_stride + from_at, size_t(count) * sizeof(T));
}

// Tokens [begin, begin + n) of every head of `codes` ((heads, n_all, d), the whole sequence's INT8 V) into `vt` as the
// INT8 P·V kernels read Vᵀ: (heads, d, pad), keys permuted within each 16 (vt_permutation.h), padding keys left 0.
inline void put_vt(int8_t* vt, const std::vector<int8_t>& codes, int64_t heads, int64_t d, int64_t n_all, int64_t begin,
                   int64_t n, int64_t pad) {
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t key = 0; key < n; ++key)
      for (int64_t c = 0; c < d; ++c)
        vt[(h * d + c) * pad + key / 16 * 16 + vt_position_of(int(key))] = codes[size_t((h * n_all + begin + key) * d + c)];
}

// `part` copied to the next aligned offset of `out`; returns that offset.
template <class T>
size_t put_part(std::vector<std::byte>& out, const std::vector<T>& part) {
  const size_t at = align_part(out.size());
  T* to = grow_part<T>(out, part.size());
  if (!part.empty()) std::memcpy(to, part.data(), part.size() * sizeof(T));
  return at;
}

}  // namespace attnlab::kernels
