// kivi's GPU cache layout (core/variants/kivi_layout.h) and its host image (kivi_image.h).
//
// The layout is checked against the contract the decode kernel (kernels/kivi/kivi_decode.cu) relies on, written
// here independently of the layout's own index functions: the mma.m16n8k16 A-fragment positions of
// kernels/common/mma.cuh (g = lane / 4, t = lane % 4; a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..),
// a3 = (g+8, 2t+8..)), the word and chunk order the kernel loads, the mask-and-OR unpacking it applies to
// a loaded word, and the dequantization it computes on each of its two paths (FP16 where the slot's flag says
// that is exact, fp16(fmaf(q, s, z)) otherwise) — which must give kivi_dequantize's K̂ and V̂ bit for bit.
#include "core/formats/half.h"
#include "core/quant/kivi.h"
#include "core/variants/kivi_image.h"
#include "core/variants/kivi_layout.h"
#include "tests/catch.h"
#include "tests/support/kivi_inexact_keys.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

namespace L = kivi_layout;

// Each (token, channel) of a slot has its own field or index, and together they fill the slot's arrays.
TEST_CASE("kivi layout: a bijection between a slot's values and its bytes", "[kivi][layout]") {
  for (int64_t d : {64, 128}) {
    for (int bits : {2, 4}) {
      std::set<int64_t> k_fields, v_fields;
      for (int64_t tau = 0; tau < L::kTile; ++tau)
        for (int64_t c = 0; c < d; ++c) {
          const L::CodeAt k = L::k_code_at(tau, c, bits), v = L::v_code_at(tau, c, d, bits);
          REQUIRE(k.byte < L::code_bytes(d, bits));
          REQUIRE(v.byte < L::code_bytes(d, bits));
          REQUIRE(k.shift % bits == 0);
          REQUIRE(v.shift % bits == 0);
          k_fields.insert(8 * k.byte + k.shift);
          v_fields.insert(8 * v.byte + v.shift);
        }
      CHECK(int64_t(k_fields.size()) == L::kTile * d);
      CHECK(int64_t(v_fields.size()) == L::kTile * d);
    }
    std::set<int64_t> k_res, v_res;
    for (int64_t tau = 0; tau < L::kTile; ++tau)
      for (int64_t c = 0; c < d; ++c) k_res.insert(L::k_residual_at(tau, c)), v_res.insert(L::v_residual_at(tau, c, d));
    CHECK(int64_t(k_res.size()) == L::kTile * d);
    CHECK(*k_res.rbegin() == L::residual_halves(d) - 1);
    CHECK(int64_t(v_res.size()) == L::kTile * d);
    CHECK(*v_res.rbegin() == L::residual_halves(d) - 1);
    for (int64_t group : {16, 32, 64, 128, 256}) {
      const int64_t kg_n = L::slot_k_groups(group), vg_n = L::v_groups(d, group);
      std::set<int64_t> kp, vp;
      for (int64_t kg = 0; kg < kg_n; ++kg)
        for (int64_t c = 0; c < d; ++c) kp.insert(L::k_scale_at(kg, c, d)), kp.insert(L::k_scale_at(kg, c, d) + 4);
      for (int64_t tau = 0; tau < L::kTile; ++tau)
        for (int64_t vg = 0; vg < vg_n; ++vg)
          vp.insert(L::v_scale_at(tau, vg, d, group)), vp.insert(L::v_scale_at(tau, vg, d, group) + 4);
      CHECK(int64_t(kp.size()) == L::k_param_halves(kg_n, d));
      CHECK(*kp.rbegin() == L::k_param_halves(kg_n, d) - 1);
      CHECK(int64_t(vp.size()) == L::v_param_halves(d, group));
      CHECK(*vp.rbegin() == L::v_param_halves(d, group) - 1);
    }
  }
}

// Keys with a few large, offset channels (why KIVI groups keys per channel), values without; some groups
// far from 0 with a small spread, so z dominates q·s and fl(q·s + z) rounds.
std::vector<float> kv_data(int64_t tokens, int64_t d, bool keys, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(size_t(tokens * d));
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t c = 0; c < d; ++c) {
      const bool outlier = keys && c % 16 == 3, offset = c % 32 == 7;
      x[size_t(t * d + c)] = n(gen) * (outlier ? 12.0f : offset ? 0.01f : 1.0f) + (outlier ? 6.0f : offset ? 300.0f : 0.0f);
    }
  return x;
}

uint32_t word_at(const std::vector<uint8_t>& bytes, int64_t word) {
  uint32_t w;
  std::memcpy(&w, bytes.data() + 4 * word, 4);
  return w;
}

// The kernel's unpacking of code p = 2r + e (0…7) of the A fragment whose word is w (kivi_decode.cu, code_pair):
// the word, or the word shifted right by 8 (4-bit r ≥ 2; odd outers h at 2 bits), masked at offset k of the
// 16-bit half e and OR-ed under 1024's FP16 bits; the half's value is 1024 + c·2ᵏ, c = (value − 1024)/2ᵏ.
int unpacked(uint32_t w, int h, int r, int e, int bits) {
  const bool high_byte = bits == 4 ? r >= 2 : h == 1;
  const int k = bits == 4 ? 4 * (r % 2) : 2 * r;
  const uint32_t x = (high_byte ? w >> 8 : w) >> (16 * e);
  const uint16_t half = uint16_t((x & (uint32_t((1 << bits) - 1) << k)) | 0x6400u);
  const float value = formats::fp16_value(half);
  REQUIRE(value >= 1024.0f);
  REQUIRE(value < 2048.0f);  // the code stayed in the mantissa
  return int(value - 1024.0f) >> k;
}

// The kernel's x̂ on each path: FP16 (a slot whose flag is set): q·s + z rounded once to FP16, as fma.rn.f16x2
// computes it; FP32: fmaf with the FP32 s and z, then RNE to FP16 (the reference's two roundings).
float fp16_path(int q, float s, float z) { return formats::round_fp16_from_double(double(q) * s + double(z)); }
float fp32_path(int q, float s, float z) { return formats::round_fp16(std::fmaf(float(q), s, z)); }

struct Case {
  int64_t d, tokens, group, residual;
  int bits;
};

TEST_CASE("kivi layout: the kernel's reads of the image give the cache's codes, s, z, residual and K̂, V̂",
          "[kivi][layout]") {
  const Case cases[] = {
      {64, 1000, 32, 128, 2},  {128, 1000, 32, 128, 4},  // Q = 864: 13½ slots; 136 residual tokens
      {64, 700, 16, 100, 4},   {128, 700, 128, 20, 2},   // g = 16: four key groups per slot; g = 128 > 64
      {64, 300, 128, 0, 4},    {128, 90, 32, 128, 2},    // g = 128 ≥ d: one value group; nothing quantized
      {128, 512, 64, 0, 2},                              // no residual at all
  };
  for (const Case& cs : cases) {
    const int64_t d = cs.d, g = cs.group, MI = d / 16;
    INFO(fmt::format("d {} tokens {} group {} residual {} bits {}", d, cs.tokens, g, cs.residual, cs.bits));
    std::vector<float> k = kv_data(cs.tokens, d, true, uint32_t(d + cs.tokens));
    const std::vector<float> v = kv_data(cs.tokens, d, false, 7);
    test::make_inexact_key_groups(k.data(), cs.tokens, d);  // slots on both of the kernel's paths
    const quant::KiviCache c = quant::kivi_quantize(k.data(), v.data(), cs.tokens, d, cs.bits, g, cs.residual);
    std::vector<float> k_hat(size_t(cs.tokens * d)), v_hat(size_t(cs.tokens * d));
    quant::kivi_dequantize(c, k_hat.data(), v_hat.data());
    const L::Image img = L::device_image(c);
    const L::Sizes sz = L::sizes_of(c);
    const int64_t Q = c.quantized_tokens, cb = L::code_bytes(d, cs.bits), vgroups = L::v_groups(d, g);
    REQUIRE(int64_t(img.k_codes.size()) == sz.code_bytes);
    REQUIRE(sz.slots == (Q + 63) / 64);
    const int shift = std::countr_zero(uint64_t(g)) - 4;  // the kernel's log₂(g / 16)

    REQUIRE(int64_t(img.slot_exact.size()) == sz.slots);
    for (int64_t slot = 0; slot < sz.slots; ++slot) {
      auto kernel_dequant = img.slot_exact[size_t(slot)] ? fp16_path : fp32_path;
      const std::vector<uint8_t> kc(img.k_codes.begin() + slot * cb, img.k_codes.begin() + (slot + 1) * cb);
      const std::vector<uint8_t> vc(img.v_codes.begin() + slot * cb, img.v_codes.begin() + (slot + 1) * cb);
      const uint16_t* kp = img.k_params.data() + L::slot_first_k_group(slot, g) * d * 2;
      const uint16_t* vp = img.v_params.data() + slot * L::v_param_halves(d, g);
      for (int lane = 0; lane < 32; ++lane) {
        const int gr = lane / 4, t = lane % 4;
        // K: A = K̂ (rows tokens, cols channels); the chunk of k-step kk holds words mt = 0…3; at 2 bits a
        // k-step pair shares the chunk, odd kk in the high half-words.
        for (int64_t kk = 0; kk < d / 16; ++kk)
          for (int64_t mt = 0; mt < 4; ++mt) {
            const uint32_t w = word_at(kc, ((cs.bits == 4 ? kk : kk / 2) * 32 + lane) * 4 + mt);
            const int64_t kg = mt >> shift;  // the kernel's key group within the slot
            REQUIRE(L::slot_first_k_group(slot, g) + kg == (slot * 64 + 16 * mt) / g);
            for (int r = 0; r < 4; ++r)
              for (int e = 0; e < 2; ++e) {
                const int64_t tok = slot * 64 + 16 * mt + gr + 8 * (r % 2), ch = 16 * kk + 2 * t + e + 8 * (r / 2);
                const int j = 2 * (r / 2) + e;
                const int code = unpacked(w, int(kk % 2), r, e, cs.bits);
                const float s = formats::fp16_value(kp[((kg * (d / 16) + kk) * 4 + t) * 8 + j]);
                const float z = formats::fp16_value(kp[((kg * (d / 16) + kk) * 4 + t) * 8 + j + 4]);
                if (tok < Q) {
                  REQUIRE(code == c.keys.q[size_t(tok * d + ch)]);
                  REQUIRE(s == c.keys.scale[size_t(tok / g * d + ch)]);
                  REQUIRE(z == c.keys.zero[size_t(tok / g * d + ch)]);
                  REQUIRE(std::bit_cast<uint32_t>(kernel_dequant(code, s, z)) ==
                          std::bit_cast<uint32_t>(k_hat[size_t(tok * d + ch)]));
                } else {
                  REQUIRE(kernel_dequant(code, s, z) == 0.0f);  // the padded tail: 0·0 + 0
                }
              }
          }
        // V: A = V̂ᵀ (rows channels, cols tokens); the chunks of k-step ks hold words mi = 4c…4c+3.
        for (int64_t ks = 0; ks < 4; ++ks)
          for (int64_t mi = 0; mi < MI; ++mi) {
            const uint32_t w = word_at(vc, (((cs.bits == 4 ? ks : ks / 2) * (MI / 4) + mi / 4) * 32 + lane) * 4 + mi % 4);
            const int64_t vg = mi >> shift;
            REQUIRE(vg == 16 * mi / g);
            for (int r = 0; r < 4; ++r)
              for (int e = 0; e < 2; ++e) {
                const int64_t ch = 16 * mi + gr + 8 * (r % 2), tau = 16 * ks + 2 * t + e + 8 * (r / 2);
                const int64_t tok = slot * 64 + tau;
                const int j = 2 * (r / 2) + e;
                const int code = unpacked(w, int(ks % 2), r, e, cs.bits);
                const float s = formats::fp16_value(vp[((ks * vgroups + vg) * 4 + t) * 8 + j]);
                const float z = formats::fp16_value(vp[((ks * vgroups + vg) * 4 + t) * 8 + j + 4]);
                if (tok < Q) {
                  REQUIRE(code == c.values.q[size_t(tok * d + ch)]);
                  REQUIRE(s == c.values.scale[size_t(tok * vgroups + vg)]);
                  REQUIRE(z == c.values.zero[size_t(tok * vgroups + vg)]);
                  REQUIRE(std::bit_cast<uint32_t>(kernel_dequant(code, s, z)) ==
                          std::bit_cast<uint32_t>(v_hat[size_t(tok * d + ch)]));
                } else {
                  REQUIRE(kernel_dequant(code, s, z) == 0.0f);
                }
              }
          }
      }
    }
    // The residual: each lane's 16 bytes of tile (outer, inner) are its A fragment (registers a0…a3, the
    // lower column in the lower half).
    const int64_t rt = c.residual_tokens();
    REQUIRE(sz.res_slots == (rt + 63) / 64);
    for (int64_t slot = 0; slot < sz.res_slots; ++slot) {
      const uint16_t* kr = img.k_residual.data() + slot * 64 * d;
      const uint16_t* vr = img.v_residual.data() + slot * 64 * d;
      for (int lane = 0; lane < 32; ++lane) {
        const int gr = lane / 4, t = lane % 4;
        for (int64_t outer = 0; outer < d / 16; ++outer)
          for (int64_t inner = 0; inner < 4; ++inner)
            for (int r = 0; r < 4; ++r)
              for (int e = 0; e < 2; ++e) {
                const int64_t row = gr + 8 * (r % 2), col = 2 * t + e + 8 * (r / 2);
                // K tile (kk = outer, mt = inner): rows tokens; V tile (ks = inner, mi = outer): rows channels.
                const int64_t k_tok = slot * 64 + 16 * inner + row, k_ch = 16 * outer + col;
                const int64_t v_tok = slot * 64 + 16 * inner + col, v_ch = 16 * outer + row;
                const float kx = formats::fp16_value(kr[((outer * 4 + inner) * 32 + lane) * 8 + 2 * r + e]);
                const float vx = formats::fp16_value(vr[((inner * MI + outer) * 32 + lane) * 8 + 2 * r + e]);
                CHECK(kx == (k_tok < rt ? k_hat[size_t((Q + k_tok) * d + k_ch)] : 0.0f));
                CHECK(vx == (v_tok < rt ? v_hat[size_t((Q + v_tok) * d + v_ch)] : 0.0f));
              }
      }
    }
  }
}

// fp32_exact's promise: where it holds, the FP16 path's one rounding is the reference's two for every code; and
// it is needed — pairs exist where they differ (a zero point far above the step), and it refuses them.
TEST_CASE("kivi layout: the FP16 path equals the reference where fp32_exact holds", "[kivi][layout]") {
  std::mt19937 gen(77);
  std::uniform_int_distribution<int> exponent(-20, 12);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  auto fp16 = [&](int e) { return formats::round_fp16(std::ldexp(mantissa(gen), e)); };
  int64_t exact_pairs = 0, differing = 0;
  for (int bits : {2, 4})
    for (int i = 0; i < 200000; ++i) {
      const int es = exponent(gen);
      const float s = fp16(es), z = (i % 2 ? -1.0f : 1.0f) * fp16(std::min(15, es + std::uniform_int_distribution<int>(-4, 24)(gen)));
      const bool exact = L::fp32_exact(s, z, bits);
      bool any_differs = false;
      for (int q = 0; q < (1 << bits); ++q) {
        const float a = fp16_path(q, s, z), b = fp32_path(q, s, z);
        if (std::bit_cast<uint32_t>(a) != std::bit_cast<uint32_t>(b)) any_differs = true;
        if (exact) REQUIRE(std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b));
      }
      exact_pairs += exact;
      differing += any_differs;
    }
  INFO(fmt::format("{} of 400000 pairs exact, {} with a code whose two roundings differ", exact_pairs, differing));
  CHECK(exact_pairs > 100000);
  // A pair where the roundings differ (found by an exhaustive search over FP16 s ≥ 0, z and q ≤ 15: 0.5% of the
  // 9.75·10⁹ inexact (s, z, q) triples): a zero point far below the step.
  const float s1 = std::ldexp(float(0x112), -12), z1 = -std::ldexp(1.0f, -24);  // 0x1.12p-4, −2⁻²⁴
  CHECK(std::bit_cast<uint32_t>(fp16_path(15, s1, z1)) != std::bit_cast<uint32_t>(fp32_path(15, s1, z1)));
  CHECK(!L::fp32_exact(s1, z1, 4));
  CHECK(L::fp32_exact(0.0f, 0.0f, 4));                                   // a padded tail
  CHECK(L::fp32_exact(0.0625f, -1.0f, 4));                               // |z|/s = 16
  CHECK(!L::fp32_exact(formats::round_fp16(1e-3f), 3000.0f, 2));        // |z|/s ≈ 3·10⁶: 33 bits
}

// Keys made by make_inexact_key_groups have both kinds of slot, so the kernel's two paths both run (the layout
// test above and the GPU tests use them); plain normal data has only exact slots.
TEST_CASE("kivi layout: slot flags", "[kivi][layout]") {
  for (int bits : {2, 4})
    for (int64_t group : {32, 128}) {
      INFO(fmt::format("bits {} group {}", bits, group));
      std::vector<float> k = kv_data(1000, 128, false, 5), v = kv_data(1000, 128, false, 6);
      test::make_inexact_key_groups(k.data(), 1000, 128);
      const quant::KiviCache c = quant::kivi_quantize(k.data(), v.data(), 1000, 128, bits, group, 128);
      const L::Image img = L::device_image(c);
      REQUIRE(img.slot_exact.size() == size_t(group == 32 ? 14 : 12));  // Q = 864 or 768
      for (size_t slot = 0; slot < img.slot_exact.size(); ++slot) {
        INFO(fmt::format("slot {}", slot));
        // g = 32: the slots holding 2⁻²⁴ (1, 4, 7, …); g = 128: every slot of a group that holds one.
        const bool tiny = group == 32 ? slot % 3 == 1 : ((slot / 2 * 2) % 3 == 1 || (slot / 2 * 2 + 1) % 3 == 1);
        CHECK(img.slot_exact[slot] == (tiny ? 0 : 1));
      }
      std::vector<float> plain(1000 * 128);
      std::mt19937 gen(3);
      std::normal_distribution<float> n(0.0f, 1.0f);
      for (float& x : plain) x = n(gen);
      for (uint8_t f : L::device_image(quant::kivi_quantize(plain.data(), plain.data(), 1000, 128, bits, group, 128)).slot_exact)
        CHECK(f == 1);
    }
}

TEST_CASE("kivi layout: caches the layout cannot hold are refused", "[kivi][layout]") {
  const std::vector<float> k = kv_data(200, 64, true, 1), v = kv_data(200, 64, false, 2);
  CHECK_THROWS_AS(L::device_image(quant::kivi_quantize(k.data(), v.data(), 200, 64, 8, 32, 16)), std::logic_error);
  CHECK_THROWS_AS(L::device_image(quant::kivi_quantize(k.data(), v.data(), 200, 64, 2, 24, 16)), std::logic_error);
  CHECK_THROWS_AS(L::device_image(quant::kivi_quantize(k.data(), v.data(), 200, 64, 2, 8, 16)), std::logic_error);
  CHECK(L::supports(64, 2, 16));
  CHECK(!L::supports(96, 2, 16));  // d/16 m-tiles of V in whole 16-byte chunks need d % 64 == 0
}

}  // namespace
}  // namespace attnlab
