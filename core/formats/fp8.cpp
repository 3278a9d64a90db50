// attnlab core: FP8 E4M3 / E5M2 encode, decode and in-place rounding (fp8.h states the rules).
//
// Both formats are rows of one table (kSpec) that the code reads; the encoder follows the case order of
// CUDA's __nv_cvt_double_to_fp8 (NaN, underflow to ±0, overflow, normal, subnormal) on the FP32 bits.
#include "core/formats/fp8.h"

#include <array>
#include <bit>
#include <limits>

namespace attnlab::formats {

namespace {

struct Spec {
  int mant_bits;             // M
  int bias;
  float min_normal;          // 2^(1 − bias)
  float sub_step;            // the subnormal spacing 2^(1 − bias − M), also the smallest subnormal
  float max;                 // largest finite value
  uint32_t first_overflow;   // FP32 bits of the smallest |x| that overflows (fp8.h: > 464 / ≥ 61440)
  uint8_t max_code;          // S.1111.110 / S.11110.11
  uint8_t special_code;      // the overflow code of Overflow::special: NaN / inf
};

constexpr std::array<Spec, 2> kSpec = {{
    // E4M3: overflow is |x| > 464, so the first overflowing FP32 is the one just above 464.
    {3, 7, 0x1p-6f, 0x1p-9f, kE4M3Max, std::bit_cast<uint32_t>(464.0f) + 1u, 0x7E, 0x7F},
    // E5M2: overflow is |x| ≥ 61440.
    {2, 15, 0x1p-14f, 0x1p-16f, kE5M2Max, std::bit_cast<uint32_t>(61440.0f), 0x7B, 0x7C},
}};

constexpr const Spec& spec(Fp8 f) { return kSpec[static_cast<int>(f)]; }

constexpr uint8_t kNanCode = 0x7F;  // what __nv_cvt_float_to_fp8 returns for any NaN, in both formats

constexpr float decode(uint8_t b, const Spec& s) {
  const uint32_t exp_field = (b & 0x7Fu) >> s.mant_bits;
  const uint32_t mant = b & ((1u << s.mant_bits) - 1u);
  const uint32_t exp_max = (1u << (7 - s.mant_bits)) - 1u;
  float v = 0.0f;
  if (exp_field == 0) {
    v = static_cast<float>(mant) * s.sub_step;  // ±0 or subnormal: mant · 2^(1 − bias − M), exact
  } else if (s.mant_bits == 3 && exp_field == exp_max && mant == 7u) {
    return std::numeric_limits<float>::quiet_NaN();  // E4M3: S.1111.111 is the only NaN
  } else if (s.mant_bits == 2 && exp_field == exp_max) {
    if (mant != 0) return std::numeric_limits<float>::quiet_NaN();
    v = std::numeric_limits<float>::infinity();  // E5M2: S.11111.00
  } else {
    v = std::bit_cast<float>(((exp_field + 127u - static_cast<uint32_t>(s.bias)) << 23) | (mant << (23 - s.mant_bits)));
  }
  return (b & 0x80u) ? -v : v;
}

template <Fp8 F>
constexpr std::array<float, 256> make_table() {
  std::array<float, 256> t{};
  for (int b = 0; b < 256; ++b) t[b] = decode(static_cast<uint8_t>(b), spec(F));
  return t;
}

constexpr std::array<std::array<float, 256>, 2> kDecode = {make_table<Fp8::e4m3>(), make_table<Fp8::e5m2>()};

}  // namespace

uint8_t fp8_bits(float x, Fp8 f, Overflow o) {
  const Spec& s = spec(f);
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const auto sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return kNanCode;
  if (abs <= std::bit_cast<uint32_t>(s.sub_step * 0.5f)) return sign;  // ≤ half the smallest subnormal
  if (abs >= s.first_overflow) return sign | (o == Overflow::saturate ? s.max_code : s.special_code);
  const int drop = 23 - s.mant_bits;  // FP32 mantissa bits below the FP8 mantissa
  if (abs < std::bit_cast<uint32_t>(s.min_normal)) {
    // Subnormal result: m = round(|x| / sub_step), counting units of the subnormal spacing; m = 2^M
    // (a carry out of the subnormal range) is exactly the code of the smallest normal.
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    // |x| = mant·2^(exp − 150) and sub_step = 2^(1 − bias − M), so m = mant >> (151 − bias − M − exp);
    // the shift is ≤ 24 above the zero cut.
    const uint32_t shift = static_cast<uint32_t>(151 - s.bias - s.mant_bits) - exp;
    const uint32_t half = 1u << (shift - 1);
    const uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t m = mant >> shift;
    if (rem > half || (rem == half && (m & 1u))) ++m;
    return static_cast<uint8_t>(sign | m);
  }
  // Normal: re-bias the exponent (127 → bias) and round the 23-bit mantissa to M bits; a carry into the
  // exponent is correct and cannot pass max_code (first_overflow was checked).
  uint32_t h = (abs - (static_cast<uint32_t>(127 - s.bias) << 23)) >> drop;
  const uint32_t rem = abs & ((1u << drop) - 1);
  const uint32_t half = 1u << (drop - 1);
  if (rem > half || (rem == half && (h & 1u))) ++h;
  return static_cast<uint8_t>(sign | h);
}

float fp8_value(uint8_t bits, Fp8 f) { return kDecode[static_cast<int>(f)][bits]; }

float round_fp8(float x, Fp8 f, Overflow o) { return fp8_value(fp8_bits(x, f, o), f); }

void round_fp8_inplace(float* x, int64_t n, Fp8 f, Overflow o) {
  const Spec& s = spec(f);
  const int drop = 23 - s.mant_bits;
  const uint32_t low = (1u << drop) - 1u;  // FP32 mantissa bits rounded away in the normal range
  const uint32_t half_minus_1 = (1u << (drop - 1)) - 1u;
  const uint32_t min_normal = std::bit_cast<uint32_t>(s.min_normal);
  const uint32_t max = std::bit_cast<uint32_t>(s.max);
  const uint32_t over = std::bit_cast<uint32_t>(o == Overflow::saturate ? s.max : fp8_value(s.special_code, f));
  const uint32_t qnan = std::bit_cast<uint32_t>(std::numeric_limits<float>::quiet_NaN());
  // Adding magic = sub_step·2²³ puts the sum in the binade whose FP32 ulp is sub_step: the FPU's own
  // round-to-nearest-even then rounds |x| < min_normal to a multiple of the subnormal spacing.
  const float magic = s.sub_step * 0x1p23f;
  // Selects are bit masks on the FP32 patterns (non-negative floats order like their bits): written as
  // ?: on floats, GCC sinks the FP work into branches and does not vectorize the loop.
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(x[i]);
    const uint32_t abs = bits & 0x7fffffffu;
    // Normal range: RNE on the bits (+ half − 1 + lsb, then truncate); a carry into the exponent is right.
    const uint32_t normal = (abs + half_minus_1 + ((abs >> drop) & 1u)) & ~low;
    const uint32_t sub = std::bit_cast<uint32_t>((std::bit_cast<float>(abs) + magic) - magic);
    const uint32_t is_sub = 0u - static_cast<uint32_t>(abs < min_normal);
    uint32_t r = (sub & is_sub) | (normal & ~is_sub);
    const uint32_t is_over = 0u - static_cast<uint32_t>(r > max);  // includes ±inf (NaN replaced below)
    r = (over & is_over) | (r & ~is_over);
    const uint32_t is_nan = 0u - static_cast<uint32_t>(abs > 0x7f800000u);
    x[i] = std::bit_cast<float>((qnan & is_nan) | ((r | (bits & 0x80000000u)) & ~is_nan));
  }
}

}  // namespace attnlab::formats
