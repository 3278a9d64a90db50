// attnlab data: a portable, seeded random number generator and the few elementary functions the data
// generators and RoPE need, written so that the same seed gives the same bits on every machine.
//
// Why not <random>: std::mt19937_64 is portable, but every std:: distribution (normal, gamma,
// student_t, even uniform_real) is implementation-defined and differs between libstdc++, libc++ and
// MSVC. Why not std::log / std::exp / std::sin / std::cos: libm results are only "close" and differ
// between C libraries (and glibc picks FMA or non-FMA code paths at run time). Everything below uses
// only IEEE-754 +, −, ×, ÷, std::sqrt (all correctly rounded), std::frexp / std::ldexp (exact), and
// 64-bit integer arithmetic, so the results are bit-identical wherever doubles are IEEE binary64 and
// evaluated at double precision (x86-64 SSE2, AArch64; not the x87 FPU).
//
// Floating-point contraction must stay off: a fused multiply-add rounds once where a × b + c rounds
// twice, so a compiler that fuses differently would change the bits. The project compiles with
// -std=c++20 and CMAKE_CXX_EXTENSIONS OFF (no -std=gnu++20), which makes GCC default to
// -ffp-contract=off; the .cpp files also turn it off explicitly for Clang, whose default is "on".
#pragma once

#include <cstdint>

namespace attnlab::data {

// SplitMix64 (Steele, Lea, Flood 2014): advances `state` by the golden-ratio increment and returns the
// mixed value. Used to expand one 64-bit key into a xoshiro state.
uint64_t splitmix64(uint64_t& state);
// The SplitMix64 output function alone: a bijective 64-bit mixer.
uint64_t mix64(uint64_t x);

// Key of one independent stream: a hash of (seed, tensor id, batch index, head index). Every head of
// every tensor draws from its own stream, so heads can be generated in any order on any number of
// threads and the result does not change.
uint64_t stream_key(uint64_t seed, uint64_t tensor, uint64_t batch, uint64_t head);

// xoshiro256** (Blackman & Vigna 2018) seeded through SplitMix64, with the draws the generators need.
class Rng {
 public:
  explicit Rng(uint64_t key);

  uint64_t next_u64();
  // Uniform integer in [0, n), n ≥ 1 (Lemire's multiply-shift with rejection: exactly uniform).
  uint64_t below(uint64_t n);
  // Uniform double in [0, 1): the top 53 bits of a draw times 2^-53.
  double uniform();
  // Uniform double in (0, 1]: safe to take the logarithm of.
  double uniform_open0();
  // Uniform double in [lo, hi).
  double uniform(double lo, double hi);
  // Standard normal by the Marsaglia polar method (two normals per accepted pair; the second is kept
  // for the next call). Uses portable_log and std::sqrt only.
  double normal();
  // Gamma(shape, 1), shape > 0, by Marsaglia & Tsang (2000); shape < 1 by the boost
  // Gamma(a) = Gamma(a + 1) · U^(1/a).
  double gamma(double shape);
  // Student's t with `nu` > 0 degrees of freedom: Z / sqrt(χ²_ν / ν), χ²_ν = 2 · Gamma(ν/2).
  double student_t(double nu);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Portable elementary functions (a few ulp of the exact value, identical bits everywhere).
// portable_log: natural logarithm for finite x > 0 (returns -inf for 0, NaN for x < 0 or NaN).
double portable_log(double x);
// portable_exp: e^x; overflows to +inf above ~709.78, underflows to 0 below ~-745.
double portable_exp(double x);
// sin and cos of x. Argument reduction by π/2 split in three parts (Cody–Waite): accurate to a few
// ulp for |x| < 2^20 · π/2 ≈ 1.6e6 (the RoPE angles of any realistic context), still deterministic
// but less accurate beyond.
void portable_sincos(double x, double& sin_x, double& cos_x);

}  // namespace attnlab::data
