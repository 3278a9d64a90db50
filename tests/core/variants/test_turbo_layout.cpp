// turbo's GPU cache layout (core/variants/turbo_layout.h) and decode's chains (turbo_chains.h).
//
// The layout is checked against the contract the decode kernel relies on, written here independently of
// the layout's own index functions: the m16n8k32 fragment positions of kernels/common/mma.cuh (g = lane / 4,
// t = lane % 4; B's b0 holds k = 4t..4t+3 and b1 k = 16+4t..16+4t+3 of column n = g) and the nibble or
// 2-bit-field masks the kernel unpacks a loaded word with. A code placed by device_image must come out of
// exactly the register byte that the kernel's unpacking puts at that (k, n).
#include "core/data/generators.h"
#include "core/variants/turbo_cache.h"
#include "core/variants/turbo_chains.h"
#include "core/variants/turbo_layout.h"
#include "core/variants/variants.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using variants::turbo_detail::DecodeSettings;
using variants::turbo_detail::HeadCache;

// Every (token, channel) of a block maps to its own `bits`-wide field, and together they fill the block.
TEST_CASE("turbo layout: every code has its own field and the fields fill the block", "[turbo][layout]") {
  for (int64_t d : {64, 128})
    for (int bits : {2, 4}) {
      const int64_t block_c = 64, bytes = turbo_layout::code_bytes(block_c, d, bits);
      std::set<int64_t> k_fields, v_fields, k8, v8;
      for (int64_t tau = 0; tau < block_c; ++tau)
        for (int64_t c = 0; c < d; ++c) {
          const auto ka = turbo_layout::k_code_at(tau, c, d, bits), va = turbo_layout::v_code_at(tau, c, d, bits);
          // The kernels compute the same positions in int arithmetic.
          const auto ki = turbo_layout::k_code_at(int(tau), int(c), int(d), bits);
          const auto vi = turbo_layout::v_code_at(int(tau), int(c), int(d), bits);
          REQUIRE((int64_t(ki.byte) == ka.byte && ki.shift == ka.shift));
          REQUIRE((int64_t(vi.byte) == va.byte && vi.shift == va.shift));
          REQUIRE(ka.byte < bytes);
          REQUIRE(va.byte < bytes);
          k_fields.insert(ka.byte * 8 + ka.shift);
          v_fields.insert(va.byte * 8 + va.shift);
          k8.insert(turbo_layout::k8_at(tau, c, d));
          v8.insert(turbo_layout::v8_at(tau, c, d));
        }
      CHECK(int64_t(k_fields.size()) == block_c * d);
      CHECK(int64_t(v_fields.size()) == block_c * d);
      CHECK(int64_t(k8.size()) == block_c * d);
      CHECK(*k8.rbegin() == block_c * d - 1);
      CHECK(int64_t(v8.size()) == block_c * d);
      CHECK(*v8.rbegin() == block_c * d - 1);
    }
}

TEST_CASE("turbo layout: V's token order is a permutation of each k-step", "[turbo][layout]") {
  std::set<int64_t> seen;
  for (int64_t k = 0; k < 32; ++k) {
    CHECK(turbo_layout::v_k_of_token(turbo_layout::v_token_of_k(k)) == k);
    seen.insert(turbo_layout::v_token_of_k(k));
  }
  CHECK(seen.size() == 32);
  // The S accumulator's c0/c1 of n-tile j hold tokens 8j + 2t and 8j + 2t + 1: P's A fragment packs the
  // four n-tiles of a k-step as (j0 c0, j0 c1, j1 c0, j1 c1) into a0 and (j2.., j3..) into a2.
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 4; ++i) {
      CHECK(turbo_layout::v_token_of_k(4 * t + i) == 8 * (i / 2) + 2 * t + i % 2);
      CHECK(turbo_layout::v_token_of_k(16 + 4 * t + i) == 16 + 8 * (i / 2) + 2 * t + i % 2);
    }
}

// A random head cache at `bits`, and the device image of it.
HeadCache random_cache(int64_t d, int bits, int64_t tokens, int64_t steps, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> k(size_t(tokens * d)), v(size_t(tokens * d));
  for (auto& x : k) x = n(rng);
  for (auto& x : v) x = n(rng);
  return variants::turbo_detail::decode_cache(k.data(), v.data(), tokens, d,
                                    DecodeSettings{64, 119, bits, quant::IntScale::nearest, 64, steps});
}

// may_saturate (the flag the cache writers store) against its definition: some code 0 … L of the channel leaves
// [−127, 127] after (code + z_int)·s_int — over every s_int and z_int the INT8 storage holds (progressive.h:
// s_int ≥ 1), both widths.
TEST_CASE("turbo layout: a channel's saturation flag is set exactly where one of its codes saturates", "[turbo][layout]") {
  for (int bits : {2, 4}) {
    int64_t flagged = 0, tested = 0;
    for (int s = 1; s <= 127; ++s)
      for (int z = -128; z <= 127; ++z) {
        bool any = false;
        for (int code = 0; code < (1 << bits); ++code) any = any || std::abs((code + z) * s) > 127;
        INFO(fmt::format("bits {} s_int {} z_int {}", bits, s, z));
        REQUIRE(turbo_layout::may_saturate(s, z, bits) == any);
        flagged += any, ++tested;
      }
    CHECK(flagged > 0);
    CHECK(flagged < tested);
  }
  // The scale array's size and where the flags start, as the kernels stage them (16-byte copies).
  CHECK(turbo_layout::scale_zero_bytes(128) == 4 * 128 + 32);
  CHECK(turbo_layout::saturation_flags_at(64) == 4 * 64);
  CHECK(turbo_layout::scale_zero_bytes(64) % 16 == 0);
}

TEST_CASE("turbo layout: the kernel's unpacking of the device image gives the blocks' codes", "[turbo][layout]") {
  for (int64_t d : {64, 128})
    for (int bits : {2, 4}) {
      // 150 prefill tokens (two full blocks and a 22-token one), 100 appended: one flushed block, 36 pending.
      const HeadCache c = random_cache(d, bits, 250, 100, uint32_t(d + bits));
      REQUIRE(c.k_blocks.size() == 4);
      REQUIRE(c.pending() == 36);
      const auto img = variants::turbo_detail::device_image(c, 64, 5);
      const int64_t cb = turbo_layout::code_bytes(64, d, bits), ks_n = d / 32;
      const uint32_t mask = bits == 4 ? 0x0F0F0F0Fu : 0x03030303u;
      auto word = [&](const uint8_t* base, int64_t index) {
        uint32_t w;
        std::memcpy(&w, base + 4 * index, 4);
        return w;
      };
      auto byte_of = [](uint32_t w, int i) { return int((w >> (8 * i)) & 0xFF); };
      int64_t flagged_channels = 0;
      for (size_t blk = 0; blk < c.k_blocks.size(); ++blk) {
        const uint8_t* kc = img.codes.data() + int64_t(blk) * 2 * cb;
        const uint8_t* vc = kc + cb;
        const auto& kb = c.k_blocks[blk];
        const auto& vb = c.v_blocks[blk];
        auto k_code = [&](int64_t tau, int64_t ch) { return tau < kb.rows ? int(kb.codes[size_t(tau * d + ch)]) : 0; };
        auto v_code = [&](int64_t tau, int64_t ch) { return tau < vb.rows ? int(vb.codes[size_t(tau * d + ch)]) : 0; };
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          // K: 4-bit words (j, lane, ks), b0 = w & mask, b1 = (w >> 4) & mask. 2-bit words (j/4, lane, ks, b0/b1),
          // each masked in place at n-tile j's field f = j mod 4: the operand's byte is the code times 4^f.
          for (int j = 0; j < 8; ++j)
            for (int ks = 0; ks < ks_n; ++ks) {
              uint32_t b0, b1;
              int scale = 0;  // the operand's bytes are code << scale
              if (bits == 4) {
                const uint32_t w = word(kc, (j * 32 + lane) * ks_n + ks);
                b0 = w & mask, b1 = (w >> 4) & mask;
              } else {
                scale = 2 * (j % 4);
                const int64_t w0 = ((j / 4) * 32 + lane) * (2 * ks_n) + 2 * ks;
                b0 = word(kc, w0) & (mask << scale), b1 = word(kc, w0 + 1) & (mask << scale);
              }
              for (int i = 0; i < 4; ++i) {
                REQUIRE(byte_of(b0, i) == k_code(8 * j + g, 32 * ks + 4 * t + i) << scale);
                REQUIRE(byte_of(b1, i) == k_code(8 * j + g, 32 * ks + 16 + 4 * t + i) << scale);
              }
            }
          // V: k-step κ of 32 tokens, n-tile jc of 8 channels; 4-bit words (κ, jc/4, lane, jc mod 4), b0 low and b1
          // high nibbles; 2-bit words (κ, jc/8, lane, (jc/4) mod 2, b0/b1) masked in place at field jc mod 4.
          for (int kappa = 0; kappa < 2; ++kappa)
            for (int jc = 0; jc < d / 8; ++jc) {
              const int64_t nj = d / 8;
              uint32_t b0, b1;
              int scale = 0;
              if (bits == 4) {
                const uint32_t w = word(vc, ((kappa * (nj / 4) + jc / 4) * 32 + lane) * 4 + jc % 4);
                b0 = w & mask, b1 = (w >> 4) & mask;
              } else {
                scale = 2 * (jc % 4);
                const int64_t w0 = ((kappa * (nj / 8) + jc / 8) * 32 + lane) * 4 + 2 * ((jc % 8) / 4);
                b0 = word(vc, w0) & (mask << scale), b1 = word(vc, w0 + 1) & (mask << scale);
              }
              for (int i = 0; i < 4; ++i) {
                const int tok0 = 32 * kappa + 8 * (i / 2) + 2 * t + i % 2;
                REQUIRE(byte_of(b0, i) == v_code(tok0, 8 * jc + g) << scale);
                REQUIRE(byte_of(b1, i) == v_code(tok0 + 16, 8 * jc + g) << scale);
              }
            }
        }
        // A slot's scale array: s_int, z_int of K and V (d INT8 each), then d/32 flag words for K and d/32 for V.
        const int8_t* sz = img.scale_zero.data() + int64_t(blk) * (4 * d + 2 * d / 8);
        for (int64_t ch = 0; ch < d; ++ch) {
          REQUIRE(sz[ch] == kb.s_int[size_t(ch)]);
          REQUIRE(sz[d + ch] == kb.z_int[size_t(ch)]);
          REQUIRE(sz[2 * d + ch] == vb.s_int[size_t(ch)]);
          REQUIRE(sz[3 * d + ch] == vb.z_int[size_t(ch)]);
        }
        // The saturation flags the decode kernel reads instead of testing s and z (bit ch mod 32 of word ch / 32):
        // set exactly where some code 0 … L of the channel dequantizes outside [−127, 127]; so every value the
        // block actually saturates has its channel flagged.
        const uint8_t* flags = reinterpret_cast<const uint8_t*>(sz + 4 * d);
        for (int which = 0; which < 2; ++which) {
          const auto& b = which == 0 ? kb : vb;
          for (int64_t ch = 0; ch < d; ++ch) {
            const uint32_t w = word(flags, which * (d / 32) + ch / 32);
            const bool flagged = (w >> (ch % 32)) & 1u;
            bool some_code = false;
            for (int code = 0; code < (1 << bits); ++code) {
              const int back = (code + b.z_int[size_t(ch)]) * b.s_int[size_t(ch)];
              some_code = some_code || back < -127 || back > 127;
            }
            REQUIRE(flagged == some_code);
            for (int64_t tau = 0; tau < b.rows; ++tau) {
              const int back = (b.codes[size_t(tau * d + ch)] + b.z_int[size_t(ch)]) * b.s_int[size_t(ch)];
              if (back < -127 || back > 127) REQUIRE(flagged);
            }
            flagged_channels += flagged;
          }
        }
        CHECK(img.block_scales[2 * blk] == kb.scale8);
        CHECK(img.block_scales[2 * blk + 1] == vb.scale8);
      }
      // Normal data at 2 bits has channels that may saturate (progressive.h: s_int up to 79); at 4 bits few or none.
      if (bits == 2) CHECK(flagged_channels > 0);
      // The unused fifth slot is zero; pending buffer tokens sit at their fragment positions.
      for (int64_t b = 4 * 2 * cb; b < 5 * 2 * cb; ++b) REQUIRE(img.codes[size_t(b)] == 0);
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        for (int j = 0; j < 8; ++j)
          for (int ks = 0; ks < ks_n; ++ks)
            for (int h = 0; h < 2; ++h)
              for (int i = 0; i < 4; ++i) {
                const int64_t tau = 8 * j + g, ch = 32 * ks + 16 * h + 4 * t + i;
                const int8_t want = tau < c.pending() ? c.k_pending[size_t(tau * d + ch)] : int8_t(0);
                REQUIRE(img.k_buffer[size_t(4 * (((j * 32 + lane) * ks_n + ks) * 2 + h) + i)] == want);
              }
      }
    }
}

// With the exact exponential, chains change nothing but rounding: each chain's P̃ is e^{S − m_chain}, a
// constant factor away from the one-loop P̃ of the same tile, and s_P scales with it, so the P codes and
// every product match; the merge rescales by e^{m_c − M} exactly as the one loop would have. What is left
// is FP32 rounding of exp, the rescales and the sums (a few ulp of O: 1e-5 relative is 80 ulp of FP32,
// and O is stored in FP16, whose rounding may flip by one unit).
TEST_CASE("turbo decode chains: with exp they compute Alg. 2's function; with SAS the merge rule", "[turbo]") {
  Problem p = test::sweep_problem(64, 900, false, true, Phase::decode);
  const QKV in = test::generated(p, "llm_like", 11);
  const auto one = test::run_checked(variants::turbo(), p, in,
                                     test::params_of(variants::turbo(), {{"exact_exp", true}, {"kv_splits", 1}, {"decode_steps", 70}}));
  for (int splits : {2, 5, 15}) {
    const auto many = test::run_checked(
        variants::turbo(), p, in,
        test::params_of(variants::turbo(), {{"exact_exp", true}, {"kv_splits", splits}, {"decode_steps", 70}}));
    for (int64_t i = 0; i < one.o.size(); ++i) {
      const float a = one.o.data()[i], b = many.o.data()[i];
      REQUIRE(std::fabs(a - b) <= 1e-5f * std::fabs(a) + std::ldexp(1.0f, std::ilogb(std::fabs(a) + 1e-30f) - 10));
    }
  }
  // With SAS, splitting changes the function (turbo_chains.h): the one loop tilts every earlier tile by
  // SAS(0) = 0.9996 per tile; 15 chains of ~1 tile each tilt nothing inside a chain. And SAS zeroes e^{S−m} below
  // n_r against each loop's own running max: where one key holds the row's max (llm_like's sink heads) the one
  // loop zeroes most of the other keys, while each chain, whose max is its own tiles', keeps them. So the bound
  // is asserted without sinks, and the sinks' part shown beside it.
  auto sas_change = [&](const QKV& x) {
    const auto sas_one = test::run_checked(variants::turbo(), p, x,
                                           test::params_of(variants::turbo(), {{"kv_splits", 1}, {"decode_steps", 70}}));
    const auto sas_many = test::run_checked(variants::turbo(), p, x,
                                            test::params_of(variants::turbo(), {{"kv_splits", 15}, {"decode_steps", 70}}));
    double diff = 0, norm = 0;
    for (int64_t i = 0; i < sas_one.o.size(); ++i) {
      diff += std::pow(double(sas_one.o.data()[i]) - sas_many.o.data()[i], 2);
      norm += std::pow(double(sas_one.o.data()[i]), 2);
    }
    return std::sqrt(diff / norm);
  };
  const double no_sinks = sas_change(test::generated(p, "llm_like", 11, {{"sink_heads", 0.0}}));
  const double sinks = sas_change(in);
  INFO("SAS one loop against 15 chains: " << no_sinks << " without sinks, " << sinks << " with");
  CHECK(no_sinks > 0);     // the chains are part of the function under SAS
  CHECK(no_sinks < 2e-2);  // 15 tiles of tilt at most: 1 − 0.9996¹⁵ = 0.6%, plus SAS's own error
  CHECK(sinks > no_sinks);  // a sink's max makes the one loop zero what the chains keep
}

TEST_CASE("turbo decode chains: the auto rule depends on the shape alone", "[turbo]") {
  CHECK(turbo_chains::chains(0, 512, 512, 128, 1, false) == 8);   // B 16 × 32 KV heads, N 32k: 4096 chains in all
  CHECK(turbo_chains::chains(0, 512, 512, 128, 1, true) == 8);    // all 2-bit: the same (16 warps per SM either way)
  CHECK(turbo_chains::chains(0, 256, 512, 128, 2, false) == 16);  // G 2: the 2-bit kernel still holds 16 warps per SM
  CHECK(turbo_chains::chains(0, 128, 512, 128, 4, false) == 16);  // GQA 32/8 at d 128, 4-bit or mixed: 8 warps, 2048
  CHECK(turbo_chains::chains(0, 128, 512, 128, 4, true) == 12);   // all 2-bit: 12 warps per SM, 1536 chains, one wave
  CHECK(turbo_chains::chains(0, 128, 512, 128, 3, true) == 12);   // G 3 runs GE 4's kernel
  CHECK(turbo_chains::chains(0, 128, 512, 128, 8, true) == 16);   // G 8 (186 registers): 8 warps at both widths
  CHECK(turbo_chains::chains(0, 128, 512, 64, 4, false) == 32);   // d 64: 16 warps per SM at every group
  CHECK(turbo_chains::chains(0, 128, 512, 64, 4, true) == 32);
  CHECK(turbo_chains::chains(0, 40, 512, 128, 4, false) == 52);   // Fig. 6's B 4 × 10 KV heads: ⌈2048 / 40⌉
  CHECK(turbo_chains::chains(0, 40, 512, 128, 4, true) == 38);    // ⌊1536 / 40⌋: 1 520 warps, one wave of 12 a SM
  CHECK(turbo_chains::chains(0, 160, 512, 128, 4, true) == 9);    // B 16 × 10 KV heads: 1 440 warps, not 1 600
  CHECK(turbo_chains::chains(0, 2000, 512, 128, 4, true) == 1);   // more pairs than a wave: one chain each
  CHECK(turbo_chains::chains(0, 40, 512, 128, 1, false) == 64);   // at least 8 tiles per chain
  CHECK(turbo_chains::chains(0, 8, 20, 128, 1, false) == 2);      // short: at least 8 tiles per chain
  CHECK(turbo_chains::chains(0, 8, 3, 128, 1, false) == 1);
  CHECK(turbo_chains::chains(7, 8, 3, 128, 1, true) == 3);        // never more chains than tiles
  CHECK(turbo_chains::first_tile(3, 3, 10) == 10);
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// The decode kernel's tiles of a cache (turbo_decode.cu, Tiles), written here from its contract: ⌈P / 64⌉ prefill
// blocks, the last one P − 64·(⌈P / 64⌉ − 1) rows; then (tokens − P) / 64 flushed blocks of 64; then the pending
// (tokens − P) mod 64 as one tile. Its rows per tile, for a cache of prefill P and `tokens` tokens.
std::vector<int64_t> kernel_tile_rows(int64_t prefill, int64_t tokens) {
  const int64_t blocks = (prefill + 63) / 64, appended = tokens - prefill;
  std::vector<int64_t> rows;
  for (int64_t j = 0; j < blocks; ++j) rows.push_back(j == blocks - 1 ? prefill - 64 * (blocks - 1) : 64);
  for (int64_t j = 0; j < appended / 64; ++j) rows.push_back(64);
  if (appended % 64 > 0) rows.push_back(appended % 64);
  return rows;
}

// Context parallelism's decode splits turbo's cache by tokens (kernels/turbo/turbo_ring.cpp): each GPU holds the tiles
// whose last token falls in its range. Cut at the ring's 128-token boundaries (and at odd ones), the parts must hold
// every tile of the whole cache once and in order — the same INT8 values after Alg. 2's dequantization, the same
// scales — every part with a range holding a tile, and each part a cache the kernel reads as it reads a whole one
// (its tiles' rows by the kernel's rule from the part's prefill and token counts).
TEST_CASE("turbo cache cut across GPUs: the parts hold every tile once, in order", "[turbo][layout]") {
  using variants::turbo_detail::Int8Tiles;
  // (tokens, decode steps): a prefill-only cache with a short last block; 22-token prefill tail then a flushed block
  // and 36 pending; a long prefill and 97 appended tokens (one flushed block, 33 pending, off the 64 grid).
  for (const auto& [tokens, steps] : {std::pair<int64_t, int64_t>{4097, 0}, {250, 100}, {4097, 97}})
    for (int bits : {2, 4}) {
      const HeadCache whole = random_cache(64, bits, tokens, steps, uint32_t(tokens + steps + bits));
      const Int8Tiles all = variants::turbo_detail::tiles_of(whole);
      const std::vector<std::vector<int64_t>> cut_sets = {{0, 128, 256, tokens},
                                                          {0, 2048, tokens},
                                                          {0, 128 * ((tokens / 3) / 128), tokens - 1, tokens},
                                                          {0, 100, 200, tokens}};
      for (const std::vector<int64_t>& cuts : cut_sets) {
        std::string at;
        for (int64_t c : cuts) at += fmt::format(" {}", c);
        INFO(fmt::format("tokens {} steps {} bits {} cuts{}", tokens, steps, bits, at));
        int64_t tile = 0, row = 0;
        for (size_t r = 0; r + 1 < cuts.size(); ++r) {
          const int64_t begin = std::min(cuts[r], tokens), end = std::min(cuts[r + 1], tokens);
          const HeadCache part = variants::turbo_detail::slice_by_last_token(whole, begin, end);
          const Int8Tiles t = variants::turbo_detail::tiles_of(part);
          if (end > begin && (end - begin >= 64 || end == tokens)) CHECK(t.tiles() > 0);
          CHECK(part.bits == whole.bits);
          CHECK(part.k_universal == whole.k_universal);
          const int64_t part_tokens = t.start.back();
          const int64_t flushed_and_pending = part_tokens - part.prefill_tokens;
          std::vector<int64_t> rows;
          for (int64_t j = 0; j < t.tiles(); ++j) rows.push_back(t.start[size_t(j + 1)] - t.start[size_t(j)]);
          CHECK(rows == kernel_tile_rows(part.prefill_tokens, part.prefill_tokens + flushed_and_pending));
          for (int64_t j = 0; j < t.tiles(); ++j, ++tile) {
            REQUIRE(tile < all.tiles());
            CHECK(t.s_k[size_t(j)] == all.s_k[size_t(tile)]);
            CHECK(t.s_v[size_t(j)] == all.s_v[size_t(tile)]);
            CHECK(all.start[size_t(tile)] == row);
            row += rows[size_t(j)];
          }
          for (int64_t i = 0; i < part_tokens * 64; ++i) {
            const int64_t at = (row - part_tokens) * 64 + i;
            if (t.k.data()[i] != all.k.data()[at] || t.v.data()[i] != all.v.data()[at]) {
              FAIL_CHECK(fmt::format("part {} value {} differs from the whole cache's", r, i));
              break;
            }
          }
        }
        CHECK(tile == all.tiles());
        CHECK(row == tokens);
      }
    }
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
