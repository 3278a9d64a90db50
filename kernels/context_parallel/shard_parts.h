// attnlab kernels: a ring shard's chunk as parts laid end to end, each starting 256-byte aligned (TMA needs 16; 256
// keeps every part on its own cache lines) — how int_flash's, kivi's and fireq's pack_shard lay out what they send.
#pragma once

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

// `part` copied to the next aligned offset of `out`; returns that offset.
template <class T>
size_t put_part(std::vector<std::byte>& out, const std::vector<T>& part) {
  const size_t at = align_part(out.size());
  T* to = grow_part<T>(out, part.size());
  if (!part.empty()) std::memcpy(to, part.data(), part.size() * sizeof(T));
  return at;
}

}  // namespace attnlab::kernels
