// The context-parallel ring (kernels/context_parallel/ring_attention.h) against the one-GPU kernel it is made of:
// every variant's ring with a kernel-table row (flash2, int_flash, flash3_fp8, kivi, fireq; check_ring says how each
// is bounded) over P ranks — on one device ([gpu]: every rank on this GPU, the same shards, blocks, transfers' order
// and merges) and over NCCL where a host has several GPUs ([gpu][multi]) — must give the variant's one-GPU kernel's
// output up to the merge's rounding. Skipped, with the reason printed, where there is no GPU (or no second GPU and
// NCCL for [multi]).
//
// flash2's bound. Both outputs are FP16 roundings of the same attention. The one-GPU kernel's differs from the exact one
// by its P̃ roundings (≤ 2⁻¹¹·max|v|: each weight within 2⁻¹¹ of the real one, a convex sum of values) and its store
// (2⁻¹¹·|o|). The ring's: each block's P̃ roundings (≤ 2⁻¹¹·max|v| over the merged, convex weights), each block's
// O stored in FP16 before the merge (2⁻¹¹·max|v|), the FP32 merge (≈ 2⁻²³), the final store (2⁻¹¹·|o|). So
//   |o_ring − o_one| ≤ 3·2⁻¹¹·max|v| + 2·2⁻¹¹·|o| + FP32 terms ≤ 2⁻⁹·(max|v| + |o_one|),
// and the logsumexps, FP32 sums of the same exponentials in another order and ex2.approx, within 10⁻⁴·(1 + |L|).
#include "core/context_parallel_bytes.h"
#include "core/data/generators.h"
#include "core/error.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/producer_loads.h"
#include "core/registry.h"
#include "core/variants/fireq_layout.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/backend.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_table.h"
#include "kernels/common/upload.h"
#include "kernels/common/vt_permutation.h"
#include "kernels/context_parallel/lse_merge.h"
#include "kernels/context_parallel/ring_attention.h"
#include "kernels/fireq/fireq_decode_host.h"
#include "kernels/fireq/fireq_prefill_host.h"
#include "kernels/flash2/flash2_host.h"
#include "kernels/fp8/flash3_fp8_host.h"
#include "kernels/int8/int_flash_host.h"
#include "kernels/kivi/kivi_decode_host.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "kernels/turbo/turbo_prefill_host.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU16 = 0x1p-11;

uint64_t fresh_seed() { return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()); }

// What the ring must reproduce: the variant's one-GPU kernel on the same inputs.
struct OneGpu {
  Tensor o;
  std::vector<float> lse;
};
OneGpu one_gpu(const kernels::DeviceInfo& dev, const VariantRequest& v, const Problem& p, const QKV& in) {
  const std::string& variant = v.id;
  if (variant == "int_flash") {  // the generation and loads the backend picks (int_flash_path, kv_loads)
    kernels::KernelPath path = kernels::KernelPath::warp_mma;
    REQUIRE(kernels::int_flash_path(v, p, dev, path).empty());
    kernels::IntFlashOutput out = kernels::int_flash_once(p, kernels::upload_int8(p, in, v.params.flag("v_fp16")), path);
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "kivi") {  // the one-GPU cache and chains the backend builds
    const kernels::KiviDeviceCache cache = kernels::upload_kivi_cache(kernels::kivi_host_caches(p, in, v.params));
    const kernels::DeviceBuffer q = kernels::upload_query_fp16(in.q);
    kernels::KiviDecodeOutput out =
        kernels::kivi_decode_once(p, cache, q.as<__half>(), kernels::kivi_chains_here(p, cache, dev.sm_count));
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "flash3_fp8") {
    kernels::Fp8Output out = kernels::flash3_fp8_once(p, kernels::upload_fp8(p, in));
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "turbo" && p.phase == Phase::decode) {  // the cache, query and chains the backend builds (turbo_run)
    const int64_t prefill = p.kv_len - v.params.integer("decode_steps");
    const kernels::TurboDeviceCache cache = kernels::upload_turbo_cache(kernels::turbo_host_caches(p, in, v.params),
                                                                        kernels::turbo_slots(prefill, p.kv_len));
    const kernels::DeviceBuffer q = kernels::upload(in.q.values());
    kernels::TurboDecodeOutput out = kernels::turbo_decode_once(p, cache, q.as<float>(), kernels::turbo_exp_args(v.params),
                                                                kernels::turbo_chains_for(p, v.params, cache.args));
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "turbo") {  // FP16 inputs, as the backend gives them
    kernels::TurboPrefillOutput out = kernels::turbo_prefill_once(p, in, v.params, 0, nullptr, /*fp16_inputs=*/true);
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "fireq" && p.phase == Phase::decode) {  // the chains the backend picks (fireq_chains_here)
    kernels::FireqDecodeOutput out = kernels::fireq_decode_once(
        p, kernels::upload_fireq(p, kernels::fireq_host_inputs(p, in, v.params)), kernels::fireq_chains_here(p, dev.sm_count));
    return {std::move(out.o), std::move(out.lse)};
  }
  if (variant == "fireq") {  // the loop order and loads the backend picks (fireq_backend.cpp)
    kernels::FireqPrefillOutput out =
        kernels::fireq_prefill_once(p, kernels::upload_fireq_prefill(kernels::fireq_prefill_host_inputs(p, in, v.params)),
                                    v.params.choice("pipeline") == "three_stage", true, producer_loads(v, 90));
    return {std::move(out.o), std::move(out.lse)};
  }
  kernels::Flash2Output out =
      kernels::flash2_once(p, kernels::upload_fp16(in), dev.sm_count, kernels::KernelPath::automatic, 0, {});
  return {std::move(out.o), std::move(out.lse)};
}

// `variant`'s ring for p over transport t against its one-GPU kernel on the same inputs. flash2: the per-element
// bound above. flash3_fp8: its chunks are quantized alone into exactly the one-GPU codes and scales (128-token
// aligned), so S is the same; what moves is P̃'s E4M3 rounding, taken against a block's running maximum instead of
// the row's (one E4M3 ulp, 2⁻⁴, where a value straddles a rounding point — an error of the FP8 format's own size,
// not a bounded multiple of the FP16 one), so the ring's error against the FP64 truth must stay within 1.25× the
// one-GPU kernel's; its logsumexp sums the FP32 P̃ (flash3_fp8.h), so it holds the 10⁻⁴ bound as flash2's does.
// int_flash: Q's, K's and V's codes and scales are the one-GPU kernel's (int_flash_ring.cpp: S_V over the whole
// sequence), so again only P's rounding moves — to INT8 codes, ≤ half a code each, against a block's maximum, never
// above the row's, so never a larger error in the row's units. O as flash3_fp8's (1.25× the one-GPU error against
// FP64); the logsumexp is log Σ codes, whose rounding (≤ half a code a key) is no longer a 10⁻⁴ affair: each row's
// against the FP64 logsumexp within 1.5× the one-GPU kernel's largest such error, + 10⁻⁴ for the FP32 merge.
// kivi (decode): every rank's shard is its tokens of the one-GPU cache (the same codes, scales, FP16 residual), so
// K̂ and V̂ are the one-GPU kernel's and flash2's bound holds with max|V̂| ≤ max|v|·(1 + 2⁻¹¹) (asymmetric codes
// dequantize inside each group's [min, max], then round to FP16).
// fireq (prefill and decode): every chunk is its tokens of the one-GPU operands (the INT4 cache's tiles, or App. D's
// E4M3 K̂, V̂ᵀ and their per-token and per-tile scales), and Q̂ and β are the one-GPU kernel's (fireq_ring.cpp), so
// again only P̃'s E4M3 rounding moves: flash3_fp8's bound on O (1.25× the one-GPU error against FP64; O in BF16 on
// both sides, each block's too, 2⁻⁹ relative — far below the INT4 cache's error that the one-GPU error holds); ℓ sums
// the FP32 P̃ before its FP8 rounding (core/variants/fireq.cpp), so the logsumexp holds the 10⁻⁴ bound.
// turbo: the prefill's chunks are Alg. 1's INT8 tiles and FP32 block scales, quantized on the host from the FP16-rounded
// inputs into exactly the one-GPU tiles (64-token blocks inside 128-aligned chunks), the decode's parts the one-GPU
// cache's tiles
// (turbo_ring.cpp); what moves is P̃'s INT8 rounding and SAS (Eq. 14–15) taken against a block's maximum: SAS's
// approximation error lands on other arguments, and its threshold n_r drops fewer keys (a block's maximum is never
// above the row's). O as int_flash's (1.25× the one-GPU error against FP64); the logsumexp — ℓ a sum of SAS's P̃,
// rescaled by SAS — against the FP64 one within 1.5× the one-GPU kernel's largest such error, + 10⁻⁴ for the merge.
void check_ring(const kernels::DeviceInfo& dev, const std::string& variant, const Problem& p, kernels::RingTransport& t,
                uint64_t seed, test::ParamSettings set = {}) {
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), seed);
  Experiment e;
  e.problem = p;
  VariantRequest v;
  v.id = variant, v.params = test::params_of(*find_variant(variant), set);
  const std::unique_ptr<kernels::RingVariant> ring = kernels::find_kernel_row(variant)->ring(e, v, in, dev);
  const kernels::RingRun run = kernels::run_ring(p, *ring, t, false);
  Problem one = p;
  one.gpus = 1;
  const OneGpu ref = one_gpu(dev, v, one, in);
  INFO(fmt::format("{} {} over {} ranks ({}): B {} heads {}/{} N {} d {} causal {} seed {} params {}", variant,
                   to_string(p.phase), run.ranks, run.transport, p.batch, p.q_heads, p.kv_heads, p.kv_len, p.head_dim, p.causal, seed,
                   v.params.to_json().dump()));
  REQUIRE(run.o.shape() == ref.o.shape());
  int64_t bad = 0;
  if (variant == "flash2" || variant == "kivi") {
    double max_v = 0;
    for (float x : in.v.values()) max_v = std::max(max_v, double(std::abs(x)) * (1 + kU16));
    for (int64_t i = 0; i < run.o.size(); ++i) {
      const double r = ref.o.data()[i], k = run.o.data()[i];
      if (!(std::abs(k - r) <= 4 * kU16 * (max_v + std::abs(r))) && bad++ < 3)
        FAIL_CHECK(fmt::format("o[{}] = {} ring vs {} one GPU", i, k, r));
    }
    CHECK(bad == 0);
  } else {
    const TensorF64 truth = attention_fp64(one, in);
    const double err_ring = compare_to_truth(run.o, truth).rel_l2, err_one = compare_to_truth(ref.o, truth).rel_l2;
    INFO(fmt::format("rel_l2 against FP64: ring {:.3e}, one GPU {:.3e}", err_ring, err_one));
    CHECK(err_ring <= 1.25 * err_one + 1e-6);
  }
  REQUIRE(run.lse.size() == ref.lse.size());
  if (variant == "int_flash" || variant == "turbo") {
    TensorF64 lse_truth;
    attention_fp64(one, in, &lse_truth);
    double worst_one = 0;
    for (size_t i = 0; i < ref.lse.size(); ++i) worst_one = std::max(worst_one, std::abs(ref.lse[i] - lse_truth.data()[i]));
    INFO(fmt::format("one GPU's largest logsumexp error against FP64: {:.3e}", worst_one));
    for (size_t i = 0; i < run.lse.size(); ++i)
      if (!(std::abs(run.lse[i] - lse_truth.data()[i]) <= 1.5 * worst_one + 1e-4) && bad++ < 3)
        FAIL_CHECK(fmt::format("lse[{}] = {} ring vs {} FP64 ({} one GPU)", i, run.lse[i], lse_truth.data()[i], ref.lse[i]));
  } else {
    for (size_t i = 0; i < run.lse.size(); ++i)
      if (!(std::abs(run.lse[i] - ref.lse[i]) <= 1e-4 * (1 + std::abs(ref.lse[i]))) && bad++ < 3)
        FAIL_CHECK(fmt::format("lse[{}] = {} ring vs {} one GPU", i, run.lse[i], ref.lse[i]));
  }
  // What crossed the links: every shard P − 1 times in the variant's format (FP16 K and V: 4·d bytes a token and KV
  // head; E4M3 with block scales, or INT8 K and V with K's token scales, about half; INT8 K with FP16 V three
  // quarters; FireQ's INT4 cache about a quarter; turbo's prefill Alg. 1's INT8 tiles with their block scales, about
  // half), or each non-empty decode part but rank 0's.
  const double fp16_bytes = 2.0 * double(p.batch * p.kv_heads * p.kv_len * p.head_dim) * 2;
  if (p.phase == Phase::prefill) {
    const cp::RingPlan plan =
        cp::plan_ring(p.q_len, p.kv_len, p.causal, run.ranks, cp::default_balance(p.causal), cp::kShardAlign);
    double shards = 0;
    for (const cp::Shards& s : plan.shards) shards += double(ring->shard_bytes(s.kv));
    CHECK(run.wire_bytes == (run.ranks - 1) * shards);
    if (variant == "flash2") CHECK(shards == fp16_bytes);
    else if (variant == "fireq" && v.params.choice("prefill_kv") == "int4") CHECK(shards < 0.3 * fp16_bytes);
    else if (v.params.values().count("v_fp16") && v.params.flag("v_fp16")) CHECK(shards < 0.8 * fp16_bytes);
    else CHECK(shards < 0.6 * fp16_bytes);
  } else {
    const std::vector<cp::Span> shards = cp::decode_shards(p.kv_len, run.ranks, cp::kShardAlign);
    double parts = 0;
    for (size_t r = 1; r < shards.size(); ++r)
      if (shards[r].size() > 0) parts += double(p.batch * p.q_heads) * double(p.head_dim * 2 + 4);
    CHECK(run.wire_bytes == parts);
  }
}

Problem problem(int64_t d, int64_t q_heads, int64_t kv_heads, int64_t n, bool causal, Phase phase) {
  Problem p;
  p.batch = 2, p.q_heads = q_heads, p.kv_heads = kv_heads, p.head_dim = d, p.kv_len = n;
  p.q_len = phase == Phase::decode ? 1 : n;
  p.causal = causal, p.phase = phase;
  return p;
}

// Prefill: zig-zag (causal) and contiguous shards over 2–4 ranks, lengths that leave ragged and empty chunks at the
// 128-token alignment (300: most chunks empty at P 4), MHA and GQA 4:1, d 64 and 128. Decode: the cache split by
// tokens, ranks whose shard is empty (N 100) and ragged ones.
TEST_CASE("context-parallel ring on one device equals the one-GPU kernel within the merge's rounding",
          "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const uint64_t seed = fresh_seed();
  for (int ranks : {2, 3, 4}) {
    const std::unique_ptr<kernels::RingTransport> t = kernels::one_device_transport(ranks);
    for (int64_t d : {64, 128})
      for (int64_t n : {300, 1100, 2048}) {
        for (bool causal : {false, true})
          check_ring(dev, "flash2", problem(d, 8, 2, n, causal, Phase::prefill), *t, seed + n);
        check_ring(dev, "flash2", problem(d, 4, 4, n, true, Phase::prefill), *t, seed + n + 1);
      }
    for (int64_t d : {64, 128})
      for (int64_t n : {100, 1000, 4097})
        check_ring(dev, "flash2", problem(d, 32, 8, n, false, Phase::decode), *t, seed + n);
    // int_flash: the mma.sync kernel (block_c 64, the default) on any GPU; full and half INT8.
    for (int64_t d : {64, 128}) {
      for (bool causal : {false, true})
        check_ring(dev, "int_flash", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d);
      check_ring(dev, "int_flash", problem(d, 4, 4, 300, true, Phase::prefill), *t, seed + d, {{"v_fp16", true}});
      check_ring(dev, "int_flash", problem(d, 32, 8, 4097, false, Phase::decode), *t, seed + d);
    }
    // kivi: decode over the sharded cache, 2 and 4 bits; N 100 leaves empty shards, 1000 and 4097 split the FP16
    // residual (the last 128–159 tokens) from the codes at a rank boundary or inside the last shard.
    for (int64_t d : {64, 128})
      for (int64_t n : {100, 1000, 4097})
        for (int bits : {2, 4})
          check_ring(dev, "kivi", problem(d, 32, 8, n, false, Phase::decode), *t, seed + n + bits, {{"bits", bits}});
    // turbo: decode over the sharded compressed cache, 4-bit heads and a quarter of them 2-bit; N 100 leaves empty
    // shards; decode_steps 97 puts a flushed block and 33 pending buffer tokens off the 128-token grid.
    for (int64_t d : {64, 128})
      for (int64_t n : {100, 1000, 4097})
        for (int64_t steps : {0, 97})
          if (steps < n)
            check_ring(dev, "turbo", problem(d, 32, 8, n, false, Phase::decode), *t, seed + n + steps,
                       {{"decode_steps", steps}, {"two_bit_heads", 2}});
    // fireq: decode over the sharded INT4 cache (FP8 tensor cores, sm_89 or newer); N 100 leaves empty shards, 1000
    // and 4097 a last 64-token tile that is short.
    if (dev.sm_major * 10 + dev.sm_minor >= 89)
      for (int64_t d : {64, 128})
        for (int64_t n : {100, 1000, 4097})
          check_ring(dev, "fireq", problem(d, 32, 8, n, false, Phase::decode), *t, seed + n + 5);
    if (!dev.warpgroup_mma) continue;  // flash3_fp8 and int_flash's wgmma kernel run on sm_90a only
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        check_ring(dev, "int_flash", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d, {{"block_c", 128}});
    for (int64_t d : {64, 128}) {
      for (bool causal : {false, true})
        check_ring(dev, "flash3_fp8", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d);
      check_ring(dev, "flash3_fp8", problem(d, 32, 8, 4097, false, Phase::decode), *t, seed + d);
    }
    // turbo's prefill: Alg. 1's INT8 tiles and block scales on the wire, each block the prefill attention on them.
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        check_ring(dev, "turbo", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d + 11);
    check_ring(dev, "turbo", problem(128, 4, 4, 300, true, Phase::prefill), *t, seed + 12);
    // fireq's prefill: the INT4 cache (the default) and App. D's FP8 operands — K's β per token, or per 128-key
    // tile; the three-stage order (d 64).
    for (int64_t d : {64, 128})
      for (bool causal : {false, true}) {
        check_ring(dev, "fireq", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d + 7);
        check_ring(dev, "fireq", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d + 8,
                   {{"prefill_kv", "fp8"}});
      }
    check_ring(dev, "fireq", problem(128, 4, 4, 300, true, Phase::prefill), *t, seed + 9,
               {{"prefill_kv", "fp8"}, {"fp8_k_scale", "tile"}});
    check_ring(dev, "fireq", problem(64, 4, 4, 300, true, Phase::prefill), *t, seed + 10,
               {{"prefill_kv", "fp8"}, {"pipeline", "three_stage"}});
  }
  if (!dev.warpgroup_mma)
    WARN("no sm_90a kernel on this GPU: flash3_fp8's, turbo's and fireq's prefill rings are not tested");
}

// Small shapes for compute-sanitizer (kernels/bench/context_parallel_session.sh): three ranks on one device, a causal
// prefill whose 128-token chunks are ragged and partly empty, and a decode with an empty shard.
TEST_CASE("context-parallel ring: small shapes for the sanitizers", "[gpu][sanitize]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const std::unique_ptr<kernels::RingTransport> t = kernels::one_device_transport(3);
  check_ring(dev, "flash2", problem(64, 4, 2, 700, true, Phase::prefill), *t, 11);
  check_ring(dev, "flash2", problem(128, 8, 2, 300, false, Phase::decode), *t, 12);
  check_ring(dev, "int_flash", problem(64, 4, 2, 700, true, Phase::prefill), *t, 13);  // INT8 shards, ragged chunks
  check_ring(dev, "kivi", problem(128, 8, 2, 700, false, Phase::decode), *t, 14);  // the residual on the last rank
  check_ring(dev, "turbo", problem(64, 8, 2, 700, false, Phase::decode), *t, 18, {{"decode_steps", 97}});
  if (dev.sm_major * 10 + dev.sm_minor >= 89)  // BF16 blocks into the merge, a short last cache tile
    check_ring(dev, "fireq", problem(128, 8, 2, 700, false, Phase::decode), *t, 15);
  if (dev.warpgroup_mma) {
    check_ring(dev, "turbo", problem(64, 4, 2, 700, true, Phase::prefill), *t, 19);
    check_ring(dev, "fireq", problem(64, 4, 2, 700, true, Phase::prefill), *t, 16);
    check_ring(dev, "fireq", problem(128, 4, 2, 700, true, Phase::prefill), *t, 17, {{"prefill_kv", "fp8"}});
  }
}

// flash2's ring with one rank failing: its shard too large for any GPU (shard_bytes of that rank's chunks 1 PiB, so the
// receive buffers every rank allocates for the largest shard do not fit), or its kernel failing (attend throws, as
// ATTNLAB_CUDA does on a failed launch, at that rank's first block).
class FailingRing final : public kernels::RingVariant {
 public:
  FailingRing(std::unique_ptr<kernels::RingVariant> inner, std::vector<cp::Span> failing, bool out_of_memory)
      : inner_(std::move(inner)), failing_(std::move(failing)), out_of_memory_(out_of_memory) {}
  size_t shard_bytes(std::span<const cp::Span> spans) const override {
    return out_of_memory_ && fails(spans) ? size_t(1) << 50 : inner_->shard_bytes(spans);
  }
  std::vector<std::byte> pack_shard(std::span<const cp::Span> spans) const override { return inner_->pack_shard(spans); }
  std::vector<std::byte> pack_queries(cp::Span rows) const override { return inner_->pack_queries(rows); }
  size_t workspace_bytes(int64_t q_rows, int64_t kv_len) const override { return inner_->workspace_bytes(q_rows, kv_len); }
  void attend(const void* q, cp::Span q_rows, const void* shard, std::span<const cp::Span> spans, int chunk, bool causal,
              void* o, float* lse, void* workspace, cudaStream_t stream) const override {
    if (!out_of_memory_ && fails(spans))
      throw std::runtime_error("CUDA error cudaErrorLaunchFailure (unspecified launch failure) in flash2_forward(a, stream)");
    inner_->attend(q, q_rows, shard, spans, chunk, causal, o, lse, workspace, stream);
  }

 private:
  bool fails(std::span<const cp::Span> spans) const { return std::equal(spans.begin(), spans.end(), failing_.begin(), failing_.end()); }
  std::unique_ptr<kernels::RingVariant> inner_;
  std::vector<cp::Span> failing_;
  bool out_of_memory_;
};

// A rank that fails fails the whole ring, with the one line its error says — out of memory on one GPU as bad input
// (InputError: the problem is too large), a failed kernel as an internal error — and leaves the GPUs and the
// transport as they were: the same ring then runs and equals the one-GPU kernel.
void check_failing_rank(const kernels::DeviceInfo& dev, kernels::RingTransport& t, uint64_t seed) {
  const Problem p = problem(64, 4, 2, 1100, true, Phase::prefill);
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), seed);
  Experiment e;
  e.problem = p;
  VariantRequest v;
  v.id = "flash2", v.params = ParamValues::defaults(find_variant("flash2")->params);
  const cp::RingPlan plan = cp::plan_ring(p.q_len, p.kv_len, p.causal, t.ranks(), cp::default_balance(p.causal), cp::kShardAlign);
  const std::vector<cp::Span> last = plan.shards.back().kv;
  auto flash2 = [&] { return kernels::find_kernel_row("flash2")->ring(e, v, in, dev); };
  try {
    (void)kernels::run_ring(p, FailingRing(flash2(), last, true), t, false);
    FAIL("a ring whose shard does not fit ran");
  } catch (const InputError& err) {
    const std::string m = err.what();
    CHECK(m.find("does not fit") != std::string::npos);
    CHECK(m.find('\n') == std::string::npos);
  }
  try {
    (void)kernels::run_ring(p, FailingRing(flash2(), last, false), t, false);
    FAIL("a ring whose kernel failed on one rank ran");
  } catch (const InputError&) {
    FAIL("a failed kernel reported as bad input");
  } catch (const std::runtime_error& err) {
    CHECK(std::string(err.what()).find("cudaErrorLaunchFailure") != std::string::npos);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  check_ring(dev, "flash2", p, t, seed);
}

TEST_CASE("context-parallel ring: a rank that fails fails the whole run, in one line", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const std::unique_ptr<kernels::RingTransport> t = kernels::one_device_transport(3);
  check_failing_rank(dev, *t, fresh_seed());
}

// The one-pass merge of a decode's partials (lse_merge_parts) against the formula in double: 1 … 8 parts of FP16 O and
// FP32 logsumexps, rows whose parts saw no key (L = −∞) weigh nothing, a row no part saw gives O = 0 and L = −∞. Bound:
// each value is a convex combination of the parts' (FP16-exact) values, summed in FP32 with weights from expf (a few
// FP32 ulps each), then stored in FP16: one FP16 rounding (2⁻¹¹ relative, or half the subnormal spacing, 2⁻²⁵, near 0)
// plus 2⁻¹⁸ of the largest |O_r| for the FP32 arithmetic over ≤ 8 terms; L within 10⁻⁵ absolute (expf, logf and the
// sum in FP32 at |L| ≤ 20).
TEST_CASE("context-parallel ring: a decode's partials merged in one pass", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const size_t rows = 37;
  const int d = 64;
  uint64_t state = 99;
  auto uniform = [&] {  // a 64-bit LCG in [0, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return double(state >> 11) / double(uint64_t(1) << 53);
  };
  for (int count = 1; count <= kernels::kMaxMergeParts; ++count) {
    std::vector<std::vector<__half>> o(static_cast<size_t>(count), std::vector<__half>(rows * d));
    std::vector<std::vector<float>> l(static_cast<size_t>(count), std::vector<float>(rows));
    for (int r = 0; r < count; ++r)
      for (size_t row = 0; row < rows; ++row) {
        // Row 0: no part saw a key; row 1: only the last part did; others: a spread of 20 in L.
        l[size_t(r)][row] = row == 0 || (row == 1 && r + 1 < count) ? -INFINITY : float(-10 + 20 * uniform());
        for (int c = 0; c < d; ++c) o[size_t(r)][row * d + size_t(c)] = __float2half(float(4 * uniform() - 2));
      }
    std::vector<kernels::DeviceBuffer> o_dev, l_dev;
    kernels::MergeParts parts;
    for (int r = 0; r < count; ++r) {
      o_dev.push_back(kernels::upload(o[size_t(r)]));
      l_dev.push_back(kernels::upload(l[size_t(r)]));
      parts.o[r] = o_dev.back().as<void>(), parts.l[r] = l_dev.back().as<float>();
    }
    parts.count = count;
    kernels::DeviceBuffer o_out(rows * d * sizeof(__half)), l_out(rows * sizeof(float));
    REQUIRE(kernels::lse_merge_parts(parts, o_out.as<void>(), kernels::OutputElement::fp16, l_out.as<float>(), rows, d,
                                     nullptr) == cudaSuccess);
    std::vector<__half> got_o(rows * d);
    std::vector<float> got_l(rows);
    REQUIRE(cudaMemcpy(got_o.data(), o_out.as<void>(), o_out.bytes(), cudaMemcpyDeviceToHost) == cudaSuccess);
    REQUIRE(cudaMemcpy(got_l.data(), l_out.as<void>(), l_out.bytes(), cudaMemcpyDeviceToHost) == cudaSuccess);
    int64_t bad = 0;
    for (size_t row = 0; row < rows; ++row) {
      double m = -INFINITY;
      for (int r = 0; r < count; ++r) m = std::max(m, double(l[size_t(r)][row]));
      if (m == -INFINITY) {
        CHECK(got_l[row] == -INFINITY);
        for (int c = 0; c < d; ++c) CHECK(__half2float(got_o[row * d + size_t(c)]) == 0.f);
        continue;
      }
      double sum = 0;
      for (int r = 0; r < count; ++r) sum += std::exp(double(l[size_t(r)][row]) - m);
      CHECK(std::abs(got_l[row] - (m + std::log(sum))) <= 1e-5);
      for (int c = 0; c < d; ++c) {
        double want = 0, largest = 0;
        for (int r = 0; r < count; ++r) {
          const double x = __half2float(o[size_t(r)][row * d + size_t(c)]);
          want += std::exp(double(l[size_t(r)][row]) - m) / sum * x;
          largest = std::max(largest, std::abs(x));
        }
        const double got = __half2float(got_o[row * d + size_t(c)]);
        const double bound = std::ldexp(std::abs(want), -11) + std::ldexp(1.0, -25) + std::ldexp(largest, -18);
        if (!(std::abs(got - want) <= bound) && bad++ < 3)
          FAIL_CHECK(fmt::format("{} parts, row {} channel {}: {} against {}", count, row, c, got, want));
      }
    }
    CHECK(bad == 0);
  }
  kernels::MergeParts none;
  CHECK(kernels::lse_merge_parts(none, nullptr, kernels::OutputElement::fp16, nullptr, 1, 64, nullptr) ==
        cudaErrorInvalidValue);
  none.count = kernels::kMaxMergeParts + 1;
  CHECK(kernels::lse_merge_parts(none, nullptr, kernels::OutputElement::fp16, nullptr, 1, 64, nullptr) ==
        cudaErrorInvalidValue);
}

// The traced run (RingRun::trace) of a timed ring: one slot per rank and step, an exchange exactly where the rank
// sends or receives (a prefill's steps but the last; a decode's step 1), no negative time, and every rank's steps
// spanning the same ring — from its start to the ring's end, so their sums agree to the ranks' start skew (a
// cross-stream or cross-GPU wait: well under 0.1 ms) — and spanning about as long as a timed run: the traced run is one
// more run of the same ring, so a sum outside half to twice the timed median means a mark in the wrong place (an
// origin after the work, an end before it), not noise.
void check_trace(const kernels::DeviceInfo& dev, const Problem& p, kernels::RingTransport& t) {
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), 21);
  Experiment e;
  e.problem = p;
  VariantRequest v;
  v.id = "flash2", v.params = ParamValues::defaults(find_variant("flash2")->params);
  const kernels::RingRun run = kernels::run_ring(p, *kernels::find_kernel_row("flash2")->ring(e, v, in, dev), t, true);
  const int P = run.ranks, steps = p.phase == Phase::decode ? 2 : P;
  INFO(fmt::format("{} over {} ranks ({}), N {}", to_string(p.phase), P, run.transport, p.kv_len));
  REQUIRE(run.trace.size() == size_t(P * steps));
  REQUIRE(!run.ms.empty());
  std::vector<float> ms = run.ms;
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::vector<double> spanned(size_t(P), 0.0);
  for (const cp::TraceSlot& s : run.trace) {
    INFO(fmt::format("step {} GPU {}: compute {} idle {} exchange {}", s.step, s.gpu, s.compute_ms, s.idle_ms, s.exchange_ms));
    CHECK(s.compute_ms >= 0);
    CHECK(s.idle_ms >= 0);
    const bool exchanges = p.phase == Phase::decode ? s.step == 1 : s.step < P - 1;
    CHECK(std::isnan(s.exchange_ms) == !exchanges);
    if (p.phase == Phase::prefill || s.step == 0) spanned[size_t(s.gpu)] += s.compute_ms + s.idle_ms;
  }
  for (int r = 0; r < P; ++r) {
    INFO(fmt::format("GPU {}: its steps span {} ms, GPU 0's {} ms, a timed run's median {} ms", r, spanned[size_t(r)],
                     spanned[0], median));
    CHECK(std::abs(spanned[size_t(r)] - spanned[0]) < 0.1);
    if (p.phase == Phase::prefill) {
      CHECK(spanned[size_t(r)] > 0.5 * median);
      CHECK(spanned[size_t(r)] < 2 * median);
    }
  }
}

TEST_CASE("context-parallel ring: the traced run's timeline", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  for (int ranks : {2, 3}) {
    const std::unique_ptr<kernels::RingTransport> t = kernels::one_device_transport(ranks);
    check_trace(dev, problem(128, 8, 2, 8192, true, Phase::prefill), *t);
    check_trace(dev, problem(128, 32, 8, 16384, false, Phase::decode), *t);
  }
  if (kernels::nccl_refusal(2).empty()) {
    const std::unique_ptr<kernels::RingTransport> t = kernels::nccl_transport(2);
    check_trace(dev, problem(128, 8, 2, 8192, true, Phase::prefill), *t);
    check_trace(dev, problem(128, 32, 8, 16384, false, Phase::decode), *t);
  }
}

TEST_CASE("context-parallel ring over NCCL equals the one-GPU kernel within the merge's rounding",
          "[gpu][multi][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  if (const std::string why = kernels::nccl_refusal(2); !why.empty()) ATTNLAB_SKIP(why);
  const uint64_t seed = fresh_seed();
  for (int ranks : {2, 4}) {
    if (!kernels::nccl_refusal(ranks).empty()) continue;
    const std::unique_ptr<kernels::RingTransport> t = kernels::nccl_transport(ranks);
    for (bool causal : {false, true})
      check_ring(dev, "flash2", problem(128, 8, 2, 4096, causal, Phase::prefill), *t, seed);
    check_ring(dev, "flash2", problem(128, 32, 8, 8192, false, Phase::decode), *t, seed);
    if (dev.warpgroup_mma) check_ring(dev, "flash3_fp8", problem(128, 8, 2, 4096, true, Phase::prefill), *t, seed);
    check_ring(dev, "int_flash", problem(128, 8, 2, 4096, true, Phase::prefill), *t, seed,
               {{"block_c", dev.warpgroup_mma ? 128 : 64}});
    check_ring(dev, "kivi", problem(128, 32, 8, 8192, false, Phase::decode), *t, seed);
    check_failing_rank(dev, *t, seed);
    check_ring(dev, "fireq", problem(128, 32, 8, 8192, false, Phase::decode), *t, seed);
    check_ring(dev, "turbo", problem(128, 32, 8, 8192, false, Phase::decode), *t, seed, {{"decode_steps", 97}});
    if (dev.warpgroup_mma) check_ring(dev, "turbo", problem(128, 8, 2, 4096, true, Phase::prefill), *t, seed);
    if (dev.warpgroup_mma) check_ring(dev, "fireq", problem(128, 8, 2, 4096, true, Phase::prefill), *t, seed);
  }
}

// The kernel backend's answers for problem.gpus > 1: every variant with a kernel has a ring (a row without one would be
// refused, "no context-parallel kernel"); the shapes the ring does not take are refused per variant, the split itself
// where NCCL or the GPUs are missing.
TEST_CASE("context-parallel ring: the kernel backend's refusals for problem.gpus > 1", "[gpu][kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  if (!dev.usable) ATTNLAB_SKIP(dev.reason);
  const kernels::KernelBackend backend;
  Experiment e;
  e.problem = problem(128, 8, 2, 1024, true, Phase::prefill);
  e.problem.gpus = 2;
  auto request = [](const std::string& id) {
    VariantRequest v;
    v.id = id, v.params = ParamValues::defaults(find_variant(id)->params);
    return v;
  };
  for (const kernels::KernelRow& row : kernels::kernel_table()) CHECK(row.ring != nullptr);
  CHECK(backend.cannot_run(request("flash2"), e).empty());
  CHECK(backend.cannot_run(request("int_flash"), e).empty());
  if (dev.warpgroup_mma)
    for (const char* id : {"flash3_fp8", "turbo", "fireq"}) CHECK(backend.cannot_run(request(id), e).empty());
  e.problem.q_len = 512;
  CHECK(backend.cannot_run(request("flash2"), e).find("q_len 512 ≠ kv_len 1024") != std::string::npos);
  CHECK(backend.cannot_split(1).empty());
  CHECK(backend.cannot_split(2) == kernels::nccl_refusal(2));
}

// The refusals need no GPU: what the ring cannot split, and NCCL's answer for more GPUs than any host has.
TEST_CASE("context-parallel ring: what it refuses, in one line each", "[kernels]") {
  Problem p = problem(128, 8, 2, 1024, true, Phase::prefill);
  CHECK(kernels::ring_refusal(p).empty());
  p.q_len = 512;
  CHECK(kernels::ring_refusal(p).find("q_len 512 ≠ kv_len 1024") != std::string::npos);
  p = problem(128, 8, 2, 1024, false, Phase::decode);
  CHECK(kernels::ring_refusal(p).empty());
  p.q_len = 4;
  CHECK(kernels::ring_refusal(p).find("one query row per head (q_len 4)") != std::string::npos);
  const std::string nccl = kernels::nccl_refusal(64);
  CHECK((nccl.find("64 GPUs asked, this host has") == 0 || nccl.find("this build has no NCCL") == 0));
  CHECK_THROWS_AS(kernels::nccl_transport(64), InputError);
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// What the cost model puts on the links (cp::wire_bytes: the variant's storage declaration for the shard's tokens)
// against what each ring packs. flash2's FP16 K and V are the same bytes; flash3_fp8's and int_flash's shards add
// only their layout's padding (Vᵀ's keys to 16, int_flash's 256-byte aligned parts, flash3_fp8's scale blocks) —
// under 1% of a 4096-token shard. CPU only: packing and sizes need no GPU.
TEST_CASE("context-parallel ring: every ring's shard is the model's wire bytes, up to its padding", "[kernels]") {
  const kernels::DeviceInfo dev;  // no GPU: the rings' layouts only
  for (const char* variant : {"flash2", "flash3_fp8", "int_flash"})
    for (bool v_fp16 : {false, true}) {
      if (v_fp16 && std::string(variant) != "int_flash") continue;
      Experiment e;
      e.problem = problem(128, 8, 2, 8192, true, Phase::prefill);
      const QKV in = data::generate(e.problem, "normal", ParamValues::defaults(data::find_generator("normal")->params), 5);
      VariantRequest v;
      v.id = variant;
      v.params = std::string(variant) == "int_flash" ? test::params_of(*find_variant(variant), {{"v_fp16", v_fp16}})
                                                     : ParamValues::defaults(find_variant(variant)->params);
      const std::unique_ptr<kernels::RingVariant> ring = kernels::find_kernel_row(variant)->ring(e, v, in, dev);
      const std::vector<cp::Span> shard{{0, 4096}};
      const double packed = double(ring->shard_bytes(shard)), model = cp::wire_bytes(e.problem, v, 4096);
      INFO(fmt::format("{} v_fp16 {}: ring {} bytes, model {}", variant, v_fp16, packed, model));
      CHECK(packed >= model);
      CHECK(packed <= 1.01 * model);
      if (std::string(variant) == "int_flash") CHECK(double(ring->pack_shard(shard).size()) == packed);
    }
  // kivi (decode): each rank's shard is its tokens of the one-GPU cache in the kernel's device image; the ranks'
  // shards together hold at least the whole cache's bytes (kivi_cache_bytes), and each packs to its stated size.
  Experiment e;
  e.problem = problem(128, 32, 8, 4097, false, Phase::decode);
  const QKV in = data::generate(e.problem, "normal", ParamValues::defaults(data::find_generator("normal")->params), 6);
  VariantRequest v;
  v.id = "kivi", v.params = ParamValues::defaults(find_variant("kivi")->params);
  const std::unique_ptr<kernels::RingVariant> ring = kernels::find_kernel_row("kivi")->ring(e, v, in, dev);
  double shards = 0, cache = 0;
  for (const cp::Span& s : cp::decode_shards(e.problem.kv_len, 3, cp::kShardAlign)) {
    const std::vector<cp::Span> one{s};
    CHECK(ring->pack_shard(one).size() == ring->shard_bytes(one));
    shards += double(ring->shard_bytes(one));
  }
  for (const quant::KiviCache& c : kernels::kivi_host_caches(e.problem, in, v.params)) cache += double(quant::kivi_cache_bytes(c));
  INFO(fmt::format("kivi: shards {} bytes, the cache {}", shards, cache));
  CHECK(shards >= cache);
  CHECK(shards <= 1.1 * cache);
  // fireq: the INT4 cache's 64-token tiles (d + 2 bytes a token and KV head, the model's exactly, up to the 256-byte
  // part alignment), in a prefill and a decode; App. D's FP8 operands (E4M3 K and V, and the scales: β_K per token or
  // per tile and β_V per tile, as FP32 where the model declares BF16 — at most 4 bytes in 2·d + 4 a token).
  for (const auto& [phase, set] :
       {std::pair{Phase::prefill, nlohmann::json::object()}, std::pair{Phase::decode, nlohmann::json::object()},
        std::pair{Phase::prefill, nlohmann::json{{"prefill_kv", "fp8"}}},
        std::pair{Phase::prefill, nlohmann::json{{"prefill_kv", "fp8"}, {"fp8_k_scale", "tile"}}}}) {
    Experiment f;
    f.problem = problem(128, 8, 2, 8192, phase == Phase::prefill, phase);
    const QKV fin = data::generate(f.problem, "normal", ParamValues::defaults(data::find_generator("normal")->params), 7);
    VariantRequest fv;
    fv.id = "fireq", fv.params = ParamValues::parse(find_variant("fireq")->params, set, "fireq");
    const std::unique_ptr<kernels::RingVariant> fring = kernels::find_kernel_row("fireq")->ring(f, fv, fin, dev);
    const std::vector<cp::Span> one{{0, 4096}};
    const double packed = double(fring->shard_bytes(one)), model = cp::wire_bytes(f.problem, fv, 4096);
    INFO(fmt::format("fireq {} {}: ring {} bytes, model {}", to_string(phase), set.dump(), packed, model));
    CHECK(double(fring->pack_shard(one).size()) == packed);
    CHECK(packed >= model);
    CHECK(packed <= 1.01 * model);
    CHECK(fring->output_element() == kernels::OutputElement::bf16);
  }
  // turbo: the prefill sends the FP16 K and V it reads (the declaration's kv_in), exactly; the decode's parts together
  // hold the whole cache's tiles (slice_by_last_token) with each part's per-part arrays (code offsets, widths, pair
  // order, universal scales), its 256-byte alignment and, on the part with the pending tokens, the 64-token buffer —
  // within 10% of the model's cache bytes at 4097 tokens, 2-bit heads and decode_steps 97 among them.
  for (const Phase phase : {Phase::prefill, Phase::decode}) {
    Experiment t;
    t.problem = phase == Phase::prefill ? problem(128, 8, 2, 8192, true, phase) : problem(128, 32, 8, 4097, false, phase);
    const QKV tin = data::generate(t.problem, "normal", ParamValues::defaults(data::find_generator("normal")->params), 8);
    VariantRequest tv;
    tv.id = "turbo";
    tv.params = phase == Phase::prefill ? ParamValues::defaults(find_variant("turbo")->params)
                                        : test::params_of(*find_variant("turbo"), {{"decode_steps", 97}, {"two_bit_heads", 2}});
    const std::unique_ptr<kernels::RingVariant> tring = kernels::find_kernel_row("turbo")->ring(t, tv, tin, dev);
    if (phase == Phase::prefill) {
      const std::vector<cp::Span> one{{0, 4096}};
      CHECK(double(tring->shard_bytes(one)) == cp::wire_bytes(t.problem, tv, 4096));
      CHECK(tring->pack_shard(one).size() == tring->shard_bytes(one));
      continue;
    }
    double parts = 0;
    for (const cp::Span& s : cp::decode_shards(t.problem.kv_len, 3, cp::kShardAlign)) {
      const std::vector<cp::Span> one{s};
      CHECK(tring->pack_shard(one).size() == tring->shard_bytes(one));
      parts += double(tring->shard_bytes(one));
    }
    const double model = cp::wire_bytes(t.problem, tv, t.problem.kv_len);
    INFO(fmt::format("turbo decode: parts {} bytes, the model's cache {}", parts, model));
    CHECK(parts >= model);
    CHECK(parts <= 1.1 * model);
  }
}

}  // namespace
}  // namespace attnlab

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// A chunk's packed bytes hold, where the kernel's arguments say (the parts end to end, each 256-byte aligned), the
// one-GPU operands of its tokens — derived here from the one-GPU host inputs, apart from the rings' own packing: fireq's
// INT4 cache tiles (fireq_cache_images), App. D's E4M3 K̂, V̂ᵀ (keys permuted per 16) and scales
// (fireq_prefill_host_inputs), and turbo's INT8 tiles of Alg. 1 (the reference's prefill_tiles on the FP16-rounded
// inputs the one-GPU backend gives the kernel). An interior chunk [256, 640) and the ragged last one [1024, 1100).
// CPU only: the bytes are packed on the host.
size_t aligned(size_t n) { return (n + 255) / 256 * 256; }

template <class T>
T at(const std::vector<std::byte>& bytes, size_t offset, size_t index) {
  T v;
  std::memcpy(&v, bytes.data() + offset + index * sizeof(T), sizeof(T));
  return v;
}

TEST_CASE("context-parallel ring: a chunk holds the one-GPU operands of its tokens", "[kernels]") {
  const kernels::DeviceInfo dev;  // no GPU: packing only
  Experiment e;
  e.problem = problem(64, 4, 2, 1100, true, Phase::prefill);
  const Problem& p = e.problem;
  const QKV in = data::generate(p, "normal", ParamValues::defaults(data::find_generator("normal")->params), 9);
  const int64_t pairs = p.batch * p.kv_heads, d = p.head_dim, n_all = p.kv_len;
  for (const cp::Span s : {cp::Span{256, 640}, cp::Span{1024, 1100}}) {
    const int64_t n = s.size();
    const std::vector<cp::Span> one{s};
    INFO(fmt::format("chunk [{}, {})", s.begin, s.end));
    // fireq, the INT4 cache: each pair's tiles [begin / 64, begin / 64 + ⌈n / 64⌉).
    {
      VariantRequest v;
      v.id = "fireq", v.params = ParamValues::defaults(find_variant("fireq")->params);
      const std::vector<std::byte> got = kernels::find_kernel_row("fireq")->ring(e, v, in, dev)->pack_shard(one);
      const kernels::FireqCacheImages images = kernels::fireq_cache_images(p, in, v.params);
      const int64_t tile = fireq_layout::tile_bytes(d), tiles = fireq_layout::tiles_for(n);
      REQUIRE(got.size() == aligned(size_t(pairs * tiles * tile)));
      int64_t bad = 0;
      for (int64_t h = 0; h < pairs; ++h)
        for (int64_t b = 0; b < tiles * tile; ++b)
          bad += uint8_t(got[size_t(h * tiles * tile + b)]) != images.images[size_t(h)][size_t(s.begin / 64 * tile + b)];
      CHECK(bad == 0);
    }
    // fireq, App. D's operands: K̂ (pairs, n, d), V̂ᵀ (pairs, d, pad16), β_K·τ (pairs, pad16), β_V (pairs, ⌈n / 128⌉).
    {
      VariantRequest v;
      v.id = "fireq", v.params = test::params_of(*find_variant("fireq"), {{"prefill_kv", "fp8"}});
      const std::vector<std::byte> got = kernels::find_kernel_row("fireq")->ring(e, v, in, dev)->pack_shard(one);
      const kernels::FireqPrefillHostInputs x = kernels::fireq_prefill_host_inputs(p, in, v.params);
      const int64_t pad = (n + 15) / 16 * 16, tiles = (n + 127) / 128, all_tiles = (n_all + 127) / 128;
      const size_t vt = aligned(size_t(pairs * n * d)), bk = vt + aligned(size_t(pairs * d * pad)),
                   bv = bk + aligned(size_t(pairs * pad) * 4);
      REQUIRE(got.size() == bv + aligned(size_t(pairs * tiles) * 4));
      int64_t bad = 0;
      for (int64_t h = 0; h < pairs; ++h) {
        for (int64_t i = 0; i < n * d; ++i) bad += at<uint8_t>(got, 0, size_t(h * n * d + i)) != x.k[size_t((h * n_all + s.begin) * d + i)];
        for (int64_t c = 0; c < d; ++c)
          for (int64_t j = 0; j < pad; ++j)
            bad += at<uint8_t>(got, vt, size_t((h * d + c) * pad + j)) != x.vt[size_t((h * d + c) * x.kv_pad + s.begin + j)];
        for (int64_t j = 0; j < pad; ++j)
          bad += at<float>(got, bk, size_t(h * pad + j)) != x.beta_k_tau[size_t(h * x.kv_pad + s.begin + j)];
        for (int64_t j = 0; j < tiles; ++j)
          bad += at<float>(got, bv, size_t(h * tiles + j)) != x.beta_v[size_t(h * all_tiles + s.begin / 128 + j)];
      }
      CHECK(bad == 0);
    }
    // turbo: Alg. 1's INT8 tiles — K^q1 (pairs, pad64, d), V^q1ᵀ (pairs, d, pad64) keys permuted per 16, (s_K, s_V)
    // per 64-token block — the reference's prefill_tiles of the pair's FP16-rounded K and V.
    {
      VariantRequest v;
      v.id = "turbo", v.params = ParamValues::defaults(find_variant("turbo")->params);
      const std::vector<std::byte> got = kernels::find_kernel_row("turbo")->ring(e, v, in, dev)->pack_shard(one);
      const int64_t pad = (n + 63) / 64 * 64, blocks = pad / 64;
      const size_t vt = aligned(size_t(pairs * pad * d)), sc = vt + aligned(size_t(pairs * d * pad));
      REQUIRE(got.size() == sc + aligned(size_t(pairs * blocks * 2) * 4));
      int64_t bad = 0;
      for (int64_t h = 0; h < pairs; ++h) {
        std::vector<float> k(size_t(n_all * d)), vv(size_t(n_all * d));
        for (size_t i = 0; i < k.size(); ++i) {
          k[i] = __half2float(__float2half_rn(in.k.head(h / p.kv_heads, h % p.kv_heads).data()[i]));
          vv[i] = __half2float(__float2half_rn(in.v.head(h / p.kv_heads, h % p.kv_heads).data()[i]));
        }
        const variants::turbo_detail::Int8Tiles t = variants::turbo_detail::prefill_tiles(k.data(), vv.data(), n_all, d, 64, 119);
        for (int64_t r = 0; r < pad; ++r)
          for (int64_t c = 0; c < d; ++c) {
            const int expect_k = r < n ? int(t.k(s.begin + r, c)) : 0, expect_v = r < n ? int(t.v(s.begin + r, c)) : 0;
            bad += at<int8_t>(got, 0, size_t((h * pad + r) * d + c)) != expect_k;
            bad += at<int8_t>(got, vt, size_t((h * d + c) * pad + r / 16 * 16 + kernels::vt_position_of(int(r)))) != expect_v;
          }
        for (int64_t j = 0; j < blocks; ++j) {
          bad += at<float>(got, sc, size_t((h * blocks + j) * 2)) != t.s_k[size_t(s.begin / 64 + j)];
          bad += at<float>(got, sc, size_t((h * blocks + j) * 2 + 1)) != t.s_v[size_t(s.begin / 64 + j)];
        }
      }
      CHECK(bad == 0);
    }
  }
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
