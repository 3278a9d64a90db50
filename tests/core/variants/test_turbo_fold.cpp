// The turbo decode kernel's fold (core/variants/turbo_fold.h): the A words of Q·Kᵀ with the K scales folded in,
// held to their definition — hi = ⌊q·s / 128⌋ and lo = q·s mod 128, as bytes, 0 for a flagged channel — over every
// Q code and every scale, at each of a word's four byte positions, and with every pattern of flags. byte_perm's
// host form (PTX prmt.b32's default mode) is checked on the cases the fold uses.
#include "core/variants/turbo_fold.h"
#include "core/variants/turbo_layout.h"
#include "tests/catch.h"

#include <cstdint>
#include <random>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using turbo_fold::byte_perm;
using turbo_fold::fold_words;

uint32_t byte_at(uint32_t w, int i) { return (w >> 8 * i) & 0xFFu; }

// The definition the kernel's MMA rows need: row g holds hi, row g + 8 lo, so 128·hi + lo = q·s (the kernel's
// S_int = 128·C[g] + C[g + 8]); lo ∈ [0, 127] so it is a non-negative INT8.
void require_fold(int q, int s, uint32_t hi_byte, uint32_t lo_byte) {
  const int p = q * s;
  INFO("q " << q << ", s " << s);
  REQUIRE(int(int8_t(uint8_t(hi_byte))) == (p >> 7));  // arithmetic shift: ⌊p / 128⌋
  REQUIRE(int(lo_byte) == (p & 127));
  REQUIRE(128 * int(int8_t(uint8_t(hi_byte))) + int(lo_byte) == p);
}

TEST_CASE("turbo fold: prmt's default mode as the fold uses it", "[turbo][fold]") {
  // Sign extension of each byte, zero extension, and the two pairings of 16-bit halves and of bytes 0 and 2.
  const uint32_t w = 0x80FF7F01u;  // bytes 01 7F FF 80
  CHECK(byte_perm(w, 0, turbo_fold::sign_extend_byte(0)) == 0x00000001u);
  CHECK(byte_perm(w, 0, turbo_fold::sign_extend_byte(1)) == 0x0000007Fu);
  CHECK(byte_perm(w, 0, turbo_fold::sign_extend_byte(2)) == 0xFFFFFFFFu);
  CHECK(byte_perm(w, 0, turbo_fold::sign_extend_byte(3)) == 0xFFFFFF80u);
  for (int i = 0; i < 4; ++i) CHECK(byte_perm(w, 0, turbo_fold::zero_extend_byte(i)) == byte_at(w, i));
  CHECK(byte_perm(0x11223344u, 0x55667788u, 0x5410u) == 0x77883344u);
  CHECK(byte_perm(0x11223344u, 0x55667788u, 0x6420u) == 0x66882244u);
}

TEST_CASE("turbo fold: hi and lo of q·s at every byte position, for every Q code and scale", "[turbo][fold]") {
  // The other three positions hold fixed, unrelated values: a position's bytes must not leak into another's.
  const uint32_t q_rest = 0x9C7F8101u, s_rest = 0x552A7F00u;
  for (int i = 0; i < 4; ++i)
    for (int q = -127; q <= 127; ++q)
      for (int s = 0; s <= 127; ++s) {
        const uint32_t mask = 0xFFu << 8 * i;
        const uint32_t qw = (q_rest & ~mask) | (uint32_t(uint8_t(int8_t(q))) << 8 * i);
        const uint32_t sw = (s_rest & ~mask) | (uint32_t(s) << 8 * i);
        const auto f = fold_words(qw, sw, 0);
        require_fold(q, s, byte_at(f.hi, i), byte_at(f.lo, i));
        for (int o = 0; o < 4; ++o)
          if (o != i)
            require_fold(int(int8_t(uint8_t(byte_at(qw, o)))), int(byte_at(sw, o)), byte_at(f.hi, o), byte_at(f.lo, o));
      }
}

TEST_CASE("turbo fold: a flagged channel folds to 0, the others as unflagged", "[turbo][fold]") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> qd(-127, 127), sd(0, 127);
  for (int trial = 0; trial < 2000; ++trial) {
    int q[4], s[4];
    uint32_t qw = 0, sw = 0;
    for (int i = 0; i < 4; ++i) {
      q[i] = qd(rng), s[i] = sd(rng);
      qw |= uint32_t(uint8_t(int8_t(q[i]))) << 8 * i;
      sw |= uint32_t(s[i]) << 8 * i;
    }
    // The kernel passes its flag word shifted so that bits 0–3 are these channels; the bits above are other
    // channels' and must be ignored.
    const uint32_t above = uint32_t(rng()) & ~0xFu;
    for (uint32_t flags = 0; flags < 16; ++flags) {
      const auto f = fold_words(qw, sw, flags | above);
      for (int i = 0; i < 4; ++i)
        require_fold(q[i], flags >> i & 1u ? 0 : s[i], byte_at(f.hi, i), byte_at(f.lo, i));
    }
  }
}

// The 2-bit path of the decode kernel (v21, turbo_layout.h): an n-tile's codes k are masked in place in field f, so
// its B operand is 4^f·k; the score's accumulators start at 4^f·Z and the kernel forms 128·C[g] + C[g + 8] modulo 2³²
// and divides by 4^f with an arithmetic shift. Emulated here in 64-bit integers over 128 channels (d 128, four
// k-steps summed into one accumulator, as the MMAs do), at the extremes (|q| = 119, K̂ = ±127, the channels the
// cache flags as saturating folded to 0) and at random: each accumulator stays inside INT32 (the MMA's), and the
// shifted result is Σ q·K̂ exactly.
TEST_CASE("turbo fold: 2-bit operands scaled by 4^f give the exact score after the shift", "[turbo][fold]") {
  std::mt19937 rng(21);
  constexpr int kD = 128;
  auto check = [](const int (&q)[kD], const int (&s)[kD], const int (&z)[kD], const int (&k)[kD], int f) {
    int64_t acc_hi = 0, acc_lo = 0, exact = 0;
    for (int c0 = 0; c0 < kD; c0 += 4) {
      uint32_t qw = 0, sw = 0, flags = 0;
      for (int i = 0; i < 4; ++i) {
        qw |= uint32_t(uint8_t(int8_t(q[c0 + i]))) << 8 * i;
        sw |= uint32_t(s[c0 + i]) << 8 * i;
        flags |= uint32_t(turbo_layout::may_saturate(s[c0 + i], z[c0 + i], 2)) << i;
      }
      const auto w = fold_words(qw, sw, flags);
      for (int i = 0; i < 4; ++i) {
        const int c = c0 + i, hi = int(int8_t(uint8_t(byte_at(w.hi, i)))), lo = int(byte_at(w.lo, i));
        const int64_t operand = int64_t(k[c]) << 2 * f;  // the masked byte: ≤ 3·64 = 192, unsigned
        REQUIRE(operand <= 255);
        acc_hi += int64_t(hi) * z[c] * (int64_t(1) << 2 * f) + int64_t(hi) * operand;
        acc_lo += int64_t(lo) * z[c] * (int64_t(1) << 2 * f) + int64_t(lo) * operand;
        if (!(flags >> i & 1u)) exact += int64_t(q[c]) * (k[c] + z[c]) * s[c];  // flagged: summed apart
      }
    }
    REQUIRE(acc_hi == int64_t(int32_t(acc_hi)));  // the MMA's INT32 accumulators do not wrap
    REQUIRE(acc_lo == int64_t(int32_t(acc_lo)));
    const int scaled = int(128u * uint32_t(int32_t(acc_hi)) + uint32_t(int32_t(acc_lo)));
    REQUIRE(int64_t(scaled) == exact * (int64_t(1) << 2 * f));
    REQUIRE((scaled >> 2 * f) == exact);
  };
  int q[kD], s[kD], z[kD], k[kD];
  for (int f = 0; f < 4; ++f)
    for (int sign : {-1, 1}) {
      // Largest products: |q| = 119 and |K̂| = |(k + z)·s| up to 127 with s = 1 (the largest |k + z| of a channel
      // that cannot saturate), the codes at their top (operand 3·4^f) and at 0 with z = −127.
      for (int c = 0; c < kD; ++c) q[c] = 119 * sign, s[c] = 1, k[c] = 3, z[c] = 124;
      check(q, s, z, k, f);
      for (int c = 0; c < kD; ++c) z[c] = -127;
      check(q, s, z, k, f);
      for (int c = 0; c < kD; ++c) k[c] = 0;
      check(q, s, z, k, f);
    }
  for (int trial = 0; trial < 2000; ++trial) {
    const int f = trial % 4;
    for (int c = 0; c < kD; ++c) {
      q[c] = int(rng() % 239) - 119, s[c] = 1 + int(rng() % 127), k[c] = int(rng() % 4);
      z[c] = int(rng() % 256) - 128;  // saturating channels among them: flagged, folded to 0
    }
    check(q, s, z, k, f);
  }
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
