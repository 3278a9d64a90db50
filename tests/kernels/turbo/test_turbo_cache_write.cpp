// TurboAttention's prefill cache written on the GPU (kernels/turbo/turbo_cache_write.cu) against the `turbo`
// reference's (core/variants/turbo_cache.h, decode_cache): every byte of every pair's slots — codes,
// s_int and z_int, the FP32 block scales — the cleared decode buffer and the universal scales, exactly
// (the kernel's arithmetic is the reference's: one FP32 division for each scale and each INT8 value, rne,
// and Eq. 10 in integers). Then the decode kernel reading that cache gives the reference's output (the
// bound of test_turbo_decode_kernel.cpp: the cache is the same, so is everything downstream).
// Skipped, with the reason printed, where there is no usable GPU. Seeds are fixed and printed.
#include "core/data/generators.h"
#include "core/quant/quantize.h"
#include "core/registry.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/device.h"
#include "kernels/int8/int_flash_host.h"
#include "kernels/turbo/turbo_cache_write.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "tests/catch.h"
#include "tests/support/turbo_gpu.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cuda_runtime.h>

#include <cmath>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

using variants::turbo_detail::device_image;
using variants::turbo_detail::DeviceImage;
using variants::turbo_detail::HeadCache;

using test::turbo;

kernels::DeviceBuffer upload(const Tensor& t) {
  kernels::DeviceBuffer d(size_t(t.size()) * sizeof(float));
  ATTNLAB_CUDA(cudaMemcpy(d.as<void>(), t.data(), d.bytes(), cudaMemcpyHostToDevice));
  return d;
}

struct Case {
  int64_t d, kv_heads, group, kv_len;
  int two_bit_heads;
  const char* int_scale;
  const char* gen;
};

// The prefill's cache of every pair written on the GPU, and the reference's, for one problem.
struct Written {
  Problem p;
  QKV in;
  ParamValues pv;
  std::vector<HeadCache> want;
  kernels::TurboDeviceCache got;
  int64_t pad = 0;                       // tokens of the INT8 tiles: whole blocks
  std::vector<int8_t> k8, vt8;           // the pre-pass's INT8 tiles, read back
};

Written write_case(const Case& c, uint64_t seed) {
  Problem p;
  p.batch = 2, p.kv_heads = c.kv_heads, p.q_heads = c.kv_heads * c.group, p.head_dim = c.d;
  p.kv_len = c.kv_len, p.q_len = 1, p.phase = Phase::decode;
  QKV in = data::generate(p, c.gen, ParamValues::defaults(data::find_generator(c.gen)->params), seed);
  const ParamValues pv = test::turbo_params({{"two_bit_heads", c.two_bit_heads}, {"int_scale", c.int_scale}});
  std::vector<HeadCache> want = kernels::turbo_host_caches(p, in, pv);  // decode_steps 0: the prefill's cache
  std::vector<int> bits;
  for (const HeadCache& h : want) bits.push_back(h.bits);  // Eq. 11–12's ranking, passed in
  kernels::TurboDeviceCache got =
      kernels::allocate_turbo_cache(bits, c.d, kernels::turbo_slots(p.kv_len, p.kv_len), p.kv_len);
  const kernels::DeviceBuffer k = upload(in.k), v = upload(in.v);  // (B, H_kv, N, d): pairs in order
  kernels::DeviceBuffer scratch(kernels::turbo_cache_write_scratch_bytes(got.args));
  const int64_t pad = (p.kv_len + kernels::kTurboBlock - 1) / kernels::kTurboBlock * kernels::kTurboBlock;
  const size_t tile_bytes = size_t(p.batch * p.kv_heads * pad * p.head_dim);
  kernels::DeviceBuffer k8(tile_bytes), vt8(tile_bytes);
  ATTNLAB_CUDA(cudaMemset(k8.as<void>(), 0x55, tile_bytes));  // poisoned: every byte must be written
  ATTNLAB_CUDA(cudaMemset(vt8.as<void>(), 0x55, tile_bytes));
  ATTNLAB_CUDA(kernels::turbo_cache_write_prefill(got.args, k.as<float>(), v.as<float>(), p.kv_len * p.head_dim,
                                                  std::string(c.int_scale) == "up", scratch.as<void>(), nullptr,
                                                  {k8.as<int8_t>(), vt8.as<int8_t>(), pad}));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  Written w{p, std::move(in), pv, std::move(want), std::move(got), pad, std::vector<int8_t>(tile_bytes),
            std::vector<int8_t>(tile_bytes)};
  ATTNLAB_CUDA(cudaMemcpy(w.k8.data(), k8.as<void>(), tile_bytes, cudaMemcpyDeviceToHost));
  ATTNLAB_CUDA(cudaMemcpy(w.vt8.data(), vt8.as<void>(), tile_bytes, cudaMemcpyDeviceToHost));
  return w;
}

void check_bytes(const Written& w, const std::string& what) {
  std::vector<float> universal(size_t(2 * w.want.size()));
  ATTNLAB_CUDA(cudaMemcpy(universal.data(), w.got.args.universal, universal.size() * sizeof(float),
                          cudaMemcpyDeviceToHost));
  test::check_cache_bytes(w.got, w.want, what);
  for (size_t pair = 0; pair < w.want.size(); ++pair) {
    INFO(fmt::format("{} pair {}", what, pair));
    CHECK(universal[2 * pair] == w.want[pair].k_universal);
    CHECK(universal[2 * pair + 1] == w.want[pair].v_universal);
  }
}

TEST_CASE("turbo prefill cache written on the GPU is the reference's, byte for byte", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  uint64_t seed = 5100;
  // Both widths side by side, a short last block (150, 1000 tokens), a whole number of blocks (256), both
  // rounding rules of s^int, heavy-tailed and plain data, d 64 and 128.
  for (const Case& c : {Case{64, 4, 1, 150, 2, "nearest", "llm_like"}, Case{128, 4, 2, 256, 1, "nearest", "llm_like"},
                        Case{128, 2, 4, 1000, 1, "up", "normal"}, Case{64, 2, 8, 64, 2, "up", "llm_like"},
                        Case{128, 8, 1, 513, 4, "nearest", "normal"}}) {
    const Written w = write_case(c, ++seed);
    check_bytes(w, fmt::format("{} d={} H_kv={} N={} 2-bit heads={} int_scale={} seed={}", c.gen, c.d, c.kv_heads,
                               c.kv_len, c.two_bit_heads, c.int_scale, seed));
  }
}

// Alg. 1's INT8 tiles (core/variants/turbo_cache.h, prefill_tiles) against the pre-pass's: K^q1 row by row,
// V^q1 at its permuted place in Vᵀ (int_flash_host.h's vt_key_at), 0 past the prefill; the scales are the
// cache's block scales, which check_bytes holds to the reference.
void check_tiles(const Written& w, const std::string& what) {
  const int64_t d = w.p.head_dim, n = w.p.kv_len;
  int64_t bad = 0;
  for (int64_t pair = 0; pair < w.p.batch * w.p.kv_heads; ++pair) {
    const int64_t b = pair / w.p.kv_heads, h = pair % w.p.kv_heads;
    const auto t = variants::turbo_detail::prefill_tiles(w.in.k.head(b, h).data(), w.in.v.head(b, h).data(), n, d,
                                                         kernels::kTurboBlock, 119);
    for (int64_t tau = 0; tau < w.pad; ++tau)
      for (int64_t c = 0; c < d; ++c) {
        const int want_k = tau < n ? int(t.k(tau, c)) : 0, want_v = tau < n ? int(t.v(tau, c)) : 0;
        const int got_k = w.k8[size_t((pair * w.pad + tau) * d + c)];
        const int64_t pos = tau / 16 * 16 + kernels::vt_position_of(int(tau));  // where key tau sits
        const int got_v = w.vt8[size_t((pair * d + c) * w.pad + pos)];
        if ((got_k != want_k || got_v != want_v) && bad++ < 4)
          FAIL_CHECK(fmt::format("{} pair {} token {} channel {}: K {} vs {}, V {} vs {}", what, pair, tau, c, got_k,
                                 want_k, got_v, want_v));
      }
  }
  CHECK(bad == 0);
}

TEST_CASE("the pre-pass's INT8 tiles are Alg. 1's, and its Q blocks too", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  for (const Case& c : {Case{64, 2, 1, 150, 1, "nearest", "llm_like"}, Case{128, 2, 2, 320, 1, "nearest", "normal"}}) {
    const Written w = write_case(c, 5300 + uint64_t(c.d));
    check_tiles(w, fmt::format("{} d={} N={}", c.gen, c.d, c.kv_len));
  }
  // Q: blocks of 64 rows (the paper's B_r), a short last one; quant::quantize at block granularity.
  for (int64_t d : {64, 128}) {
    Problem p;
    p.batch = 1, p.q_heads = 3, p.kv_heads = 3, p.head_dim = d, p.q_len = p.kv_len = 200;
    const QKV in = data::generate(p, "llm_like", ParamValues::defaults(data::find_generator("llm_like")->params), 5400);
    const kernels::DeviceBuffer q = upload(in.q);
    kernels::DeviceBuffer q8(size_t(in.q.size())), s_q(size_t(3 * 4) * sizeof(float));
    ATTNLAB_CUDA(kernels::turbo_quantize_q_blocks(q.as<float>(), 3, 200, int(d), 64, q8.as<int8_t>(), s_q.as<float>(), nullptr));
    std::vector<int8_t> got(size_t(in.q.size()));
    std::vector<float> got_s(12);
    ATTNLAB_CUDA(cudaMemcpy(got.data(), q8.as<void>(), got.size(), cudaMemcpyDeviceToHost));
    ATTNLAB_CUDA(cudaMemcpy(got_s.data(), s_q.as<void>(), got_s.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int64_t h = 0; h < 3; ++h) {
      const quant::Quantized want = quant::quantize(
          in.q.head(0, h).data(), 200, d,
          quant::Spec{.bits = 8, .granularity = quant::Granularity::block, .block_rows = 64, .q_max = 119});
      INFO(fmt::format("d={} head {}", d, h));
      for (size_t i = 0; i < want.q.size(); ++i)
        if (int(got[size_t(h * 200 * d) + i]) != want.q[i]) FAIL_CHECK(fmt::format("q8[{}] = {} vs {}", i, got[size_t(h * 200 * d) + i], want.q[i]));
      for (size_t blk = 0; blk < 4; ++blk) CHECK(got_s[size_t(h * 4) + blk] == want.scale[blk]);
    }
  }
}

TEST_CASE("turbo decode over the GPU-written prefill cache equals the reference", "[gpu][kernels][turbo]") {
  GPU_OR_SKIP();
  const Case c{128, 2, 4, 700, 1, "nearest", "llm_like"};
  const uint64_t seed = 5200;
  const Written w = write_case(c, seed);
  check_bytes(w, "decode case");
  const ReferenceOutput ref = turbo().reference(w.p, w.in, w.pv, {});
  kernels::DeviceBuffer q = upload(w.in.q);
  const auto out = kernels::turbo_decode_once(w.p, w.got, q.as<float>(), kernels::turbo_exp_args(w.pv),
                                              kernels::turbo_chains_for(w.p, w.pv, w.got.args));
  // The same cache as the uploaded one, so test_turbo_decode_kernel.cpp's bound applies (ℓ's order only).
  for (int64_t i = 0; i < out.o.size(); ++i) {
    const double r = ref.o.data()[i], k = out.o.data()[i];
    const double a = std::max({std::abs(r), std::abs(k), std::ldexp(1.0, -14)});
    INFO(fmt::format("o[{}] seed {}", i, seed));
    CHECK(std::abs(k - r) <= 2e-5 * std::abs(r) + std::ldexp(1.0, std::ilogb(a) - 10));
  }
}

// A small shape for compute-sanitizer (memcheck, racecheck): both widths, a short block.
TEST_CASE("turbo prefill cache writer on a small shape (sanitizer run)", "[gpu][sanitize]") {
  GPU_OR_SKIP();
  check_bytes(write_case(Case{64, 2, 1, 100, 1, "nearest", "llm_like"}, 77), "sanitizer case");
}

}  // namespace
}  // namespace attnlab
