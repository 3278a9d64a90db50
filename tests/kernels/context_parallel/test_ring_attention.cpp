// The context-parallel ring (kernels/context_parallel/ring_attention.h) against the one-GPU kernel it is made of:
// flash2's (and flash3_fp8's and int_flash's, check_ring says how) ring over P ranks — on one device ([gpu]: every rank on this GPU, the same shards, blocks, transfers'
// order and merges) and over NCCL where a host has several GPUs ([gpu][multi]) — must give the one-GPU flash2
// kernel's output up to the merge's rounding. Skipped, with the reason printed, where there is no GPU (or no
// second GPU and NCCL for [multi]).
//
// The bound. Both outputs are FP16 roundings of the same attention. The one-GPU kernel's differs from the exact one
// by its P̃ roundings (≤ 2⁻¹¹·max|v|: each weight within 2⁻¹¹ of the real one, a convex sum of values) and its store
// (2⁻¹¹·|o|). The ring's: each block's P̃ roundings (≤ 2⁻¹¹·max|v| over the merged, convex weights), each block's
// O stored in FP16 before the merge (2⁻¹¹·max|v|), the FP32 merge (≈ 2⁻²³), the final store (2⁻¹¹·|o|). So
//   |o_ring − o_one| ≤ 3·2⁻¹¹·max|v| + 2·2⁻¹¹·|o| + FP32 terms ≤ 2⁻⁹·(max|v| + |o_one|),
// and the logsumexps, FP32 sums of the same exponentials in another order and ex2.approx, within 10⁻⁴·(1 + |L|).
#include "core/data/generators.h"
#include "core/error.h"
#include "core/ground_truth.h"
#include "core/metrics.h"
#include "core/registry.h"
#include "kernels/common/backend.h"
#include "kernels/common/device.h"
#include "kernels/common/kernel_table.h"
#include "kernels/context_parallel/ring_attention.h"
#include "kernels/flash2/flash2_host.h"
#include "kernels/fp8/flash3_fp8_host.h"
#include "kernels/int8/int_flash_host.h"
#include "kernels/kivi/kivi_decode_host.h"
#include "sim/context_parallel_model.h"
#include "tests/catch.h"
#include "tests/support/variant_cases.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

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
  if (variant == "int_flash") {
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
  // quarters), or each non-empty decode part but rank 0's.
  const double fp16_bytes = 2.0 * double(p.batch * p.kv_heads * p.kv_len * p.head_dim) * 2;
  if (p.phase == Phase::prefill) {
    const cp::RingPlan plan =
        cp::plan_ring(p.q_len, p.kv_len, p.causal, run.ranks, cp::default_balance(p.causal), cp::kShardAlign);
    double shards = 0;
    for (const cp::Shards& s : plan.shards) shards += double(ring->shard_bytes(s.kv));
    CHECK(run.wire_bytes == (run.ranks - 1) * shards);
    if (variant == "flash2") CHECK(shards == fp16_bytes);
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
    if (!dev.warpgroup_mma) continue;  // flash3_fp8 and int_flash's wgmma kernel run on sm_90a only
    for (int64_t d : {64, 128})
      for (bool causal : {false, true})
        check_ring(dev, "int_flash", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d, {{"block_c", 128}});
    for (int64_t d : {64, 128}) {
      for (bool causal : {false, true})
        check_ring(dev, "flash3_fp8", problem(d, 8, 2, 1100, causal, Phase::prefill), *t, seed + d);
      check_ring(dev, "flash3_fp8", problem(d, 32, 8, 4097, false, Phase::decode), *t, seed + d);
    }
  }
  if (!dev.warpgroup_mma) WARN("no sm_90a kernel on this GPU: flash3_fp8's ring is not tested");
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
  }
}

// The kernel backend's answers for problem.gpus > 1: the variants without a ring and the shapes the ring does not take
// are refused per variant, the split itself where NCCL or the GPUs are missing.
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
  CHECK(backend.cannot_run(request("turbo"), e).find("no context-parallel kernel") == 0);
  CHECK(backend.cannot_run(request("flash2"), e).empty());
  CHECK(backend.cannot_run(request("int_flash"), e).empty());
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

// What the cost model puts on the links (sim::wire_bytes: the variant's storage declaration for the shard's tokens)
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
      const double packed = double(ring->shard_bytes(shard)), model = sim::wire_bytes(e.problem, v, 4096);
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
}

}  // namespace
}  // namespace attnlab
