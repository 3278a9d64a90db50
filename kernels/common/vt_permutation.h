// attnlab kernels: the key order of Vᵀ that the INT8 P·V kernels read (int_flash.h) — one definition for the
// host that lays V out (int_flash_host.cpp), the GPU pre-pass that does (turbo_cache_write.cu) and the tests.
#pragma once

#if defined(__CUDACC__)
#define ATTNLAB_VT_HD __host__ __device__
#else
#define ATTNLAB_VT_HD
#endif

namespace attnlab::kernels {

// The key stored at `position` within its group of 16 in Vᵀ: position 4t + e holds key 8·⌊e/2⌋ + 2t + (e mod 2),
// the order in which the S accumulator hands P's codes to the P·V product.
ATTNLAB_VT_HD constexpr int vt_key_at(int position) {
  const int t = position / 4, e = position % 4;
  return 8 * (e / 2) + 2 * t + (e % 2);
}
// Its inverse: the position within its group of 16 at which key `key` (mod 16) is stored.
ATTNLAB_VT_HD constexpr int vt_position_of(int key) {
  const int k = key % 16;
  return 4 * ((k % 8) / 2) + 2 * (k / 8) + k % 2;
}

}  // namespace attnlab::kernels
