// attnlab kernels: turbo's row of the kernel table (kernel_table.h) — prefill on Hopper (turbo_prefill_host.h:
// the pre-pass writes the compressed cache and the INT8 tiles, then the attention; Q, K and V in FP16, as Alg. 1
// and flash2's backend have them — the tests hold the FP32 path to the reference bit for bit, and the FP16 path
// to the FP32 one on FP16 inputs), and decode over the compressed cache (turbo_decode.h). For decode the cache is built
// on the host by the reference's own code and uploaded in the layout of core/variants/turbo_layout.h (the
// prefill's GPU writer gives the same bytes: test_turbo_cache_write.cpp); the step's queries go up in FP32.
// One poisoned-output correctness launch, then
// the timed attention launches; with decode_steps > 0 also the multi-step decode the paper's serving loop
// runs: from the prefill's cache, every generated token appended to the buffer (flushing every 64) and
// attended, timed per step.
#include "kernels/common/fp16_upload.h"
#include "kernels/common/kernel_table.h"
#include "kernels/common/timing.h"
#include "kernels/turbo/turbo_decode_host.h"
#include "kernels/turbo/turbo_prefill_host.h"

#include "core/probes.h"
#include "core/registry.h"
#include "core/variants/turbo_layout.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

namespace attnlab::kernels {

namespace {

// Bytes one attention launch must move: every coded block's codes, s_int/z_int, saturation flags and block scales, the
// buffer when it holds tokens, the universal scales, q (FP32) in and O (FP16), L (FP32) out.
double step_bytes(const Problem& p, const TurboDeviceCache& c) {
  const int tiles = turbo_decode_tiles(c.args);
  const int64_t d = p.head_dim;
  const int64_t pending = (c.args.tokens - c.args.prefill_tokens) % kTurboBlock;
  const int64_t coded = tiles - (pending > 0 ? 1 : 0);
  double bytes = 0;
  for (int bits : c.head_bits)
    bytes += double(coded) *
                 double(2 * turbo_layout::code_bytes(kTurboBlock, d, bits) + turbo_layout::scale_zero_bytes(d) + 8) +
             (pending > 0 ? double(2 * kTurboBlock * d + 8) : 0.0);
  const double rows = double(p.batch * p.q_heads);
  return bytes + rows * double(d) * (4 + 2) + rows * 4;
}

// The decode_steps tokens' K and V rows, (steps, pairs, d) each, as the append kernel takes them.
std::vector<float> appended_rows(const Problem& p, const Tensor& x, int64_t steps) {
  const int64_t d = p.head_dim, pairs = p.batch * p.kv_heads;
  std::vector<float> rows(size_t(steps * pairs * d));
  for (int64_t s = 0; s < steps; ++s)
    for (int64_t bh = 0; bh < pairs; ++bh)
      std::memcpy(rows.data() + (s * pairs + bh) * d,
                  x.head(bh / p.kv_heads, bh % p.kv_heads).data() + (p.kv_len - steps + s) * d, size_t(d) * sizeof(float));
  return rows;
}

}  // namespace

// Prefill: the pre-pass and the attention timed together (what FP16 attention is compared with), and apart.
void turbo_prefill_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
                       VariantResult& into) {
  const Problem& p = e.problem;
  const ParamValues& params = v.params;
  // Q, K and V in FP16, as Alg. 1 reads them and as flash2's backend gives them to its kernel.
  const TurboPrefillOutput once = turbo_prefill_once(p, in, params, 0, nullptr, /*fp16_inputs=*/true);
  const std::vector<int> bits = once.cache.head_bits;
  // The timed prefill ranks the heads on the GPU where `once` did (the whole prefill, one sequence of launches), else
  // takes the widths `once` had.
  TurboPrefillWork work(p, params, [&] { return bits; });
  DeviceBuffer o(size_t(p.batch * p.q_heads * p.q_len * p.head_dim) * sizeof(__half));
  DeviceBuffer lse(size_t(p.batch * p.q_heads * p.q_len) * sizeof(float));
  const size_t set_bytes = size_t(in.q.size() + in.k.size() + in.v.size()) * sizeof(__half);
  const size_t copies = input_copies(set_bytes);
  std::vector<__half> set_fp16;  // Q, K, V one after the other, as the timed launches read them
  set_fp16.reserve(set_bytes / sizeof(__half));
  for (const Tensor* t : {&in.q, &in.k, &in.v}) {
    const std::vector<__half> h = fp16_values(*t);
    set_fp16.insert(set_fp16.end(), h.begin(), h.end());
  }
  std::vector<DeviceBuffer> sets;
  for (size_t i = 0; i < copies; ++i) {
    DeviceBuffer b(set_bytes);
    ATTNLAB_CUDA(cudaMemcpy(b.as<void>(), set_fp16.data(), set_bytes, cudaMemcpyHostToDevice));
    sets.push_back(std::move(b));
  }
  auto inputs = [&](size_t i) {
    const __half* q = sets[i].as<__half>();
    return std::array<const __half*, 3>{q, q + in.q.size(), q + in.q.size() + in.k.size()};
  };
  auto whole = [&](bool cache) {
    return time_launches([&](size_t i) {
      const auto x = inputs(i);
      turbo_prefill_launch(p, params, x[0], x[1], x[2], work, o.as<__half>(), lse.as<float>(), cache);
    }, copies);
  };
  const Timings total = whole(true), no_cache = whole(false);
  const Timings attend =
      time_launches([&](size_t) { turbo_prefill_attend(p, work, o.as<__half>(), lse.as<float>()); }, 1);
  // Bytes: the FP16 inputs read, the INT8 tiles and Q blocks written and read, the cache written, O and L.
  const double tiles = 2.0 * double(p.batch * p.kv_heads) * double(work.pad * p.head_dim);
  const double q8 = double(p.batch * p.q_heads * p.q_len * p.head_dim);
  const double bytes = double(set_bytes) + 2 * tiles + 2 * q8 + double(once.cache.bytes()) +
                       double(p.batch * p.q_heads * p.q_len) * double(2 * p.head_dim + 4);
  into.kernel = result_of(p, once.o, once.lse, truth, total, bytes);
  into.kernel->probes["prefill.parts"] = labelled(
      {"total_ms", "without_cache_ms", "attention_ms"},
      {percentile(total.ms, 0.5), percentile(no_cache.ms, 0.5), percentile(attend.ms, 0.5)}, "ms",
      "the whole prefill (pre-pass: INT8 tiles and the compressed cache; Q's blocks; attention), the same without "
      "writing the cache, and the attention alone");
  std::vector<double> kv_bits(bits.begin(), bits.end());
  into.kernel->probes["kv_bits"] = {{p.batch, p.kv_heads}, kv_bits, {}, "bits", "cache width per KV head on the GPU"};
  into.kernel->probes["kernel.launch"] =
      labelled({"input_sets", "timed_runs", "arch", "tma_producer"},
               {double(copies), double(kTimedRuns), 90.0, double(work.tma_producer)}, "",
               "rotating input copies, timed launches, kernel generation (90: wgmma), K/V by a TMA producer warpgroup");
}

std::string turbo_cannot_run(const VariantRequest& v, const Experiment& e, const DeviceInfo& dev) {
  const Problem& p = e.problem;
  // The split of P̃'s exponentials between SAS and exp (core/variants/turbo_sas_share.h): the prefill kernel mixes SAS in
  // FP32 with exp2 by 8-key blocks; the decode kernel computes one function for every score.
  const bool mixed = v.params.real("sas_share") != 1.0;
  if (mixed && p.phase == Phase::decode)
    return "the turbo decode kernel computes every exponential one way (SAS, or exp2 with exact_exp): sas_share 1 only";
  if (mixed && v.params.choice("sas_precision") != "fp32")
    return "the turbo prefill kernel mixes SAS in FP32 with exp2 (sas_precision = fp32 for a sas_share below 1)";
  if (p.phase == Phase::prefill) {
    if (!dev.warpgroup_mma) return "the turbo prefill kernel is sm_90a (warpgroup MMA): it needs a Hopper GPU";
    return turbo_prefill_cannot_run(p, v.params);
  }
  if (!turbo_decode_supports(int(p.head_dim), int(p.group())))
    return fmt::format("no turbo decode kernel for head_dim {} with {} query heads per KV head (compiled: d 64, 128; "
                       "at most 8 per KV head)", p.head_dim, p.group());
  if (v.params.integer("block_c") != kTurboBlock || v.params.integer("n_b") != kTurboBlock)
    return fmt::format("the kernel's cache blocks and buffer hold {} tokens: set block_c and n_b to {}", kTurboBlock,
                       kTurboBlock);
  if (v.params.integer("bits_hi") != 4) return "the kernel reads 2- and 4-bit heads (bits_hi = 4)";
  if (v.params.choice("sas_precision") != "fp32") return "the kernel evaluates SAS in FP32 (sas_precision = fp32)";
  const int64_t narrow = v.params.integer("two_bit_heads");
  const int smem = turbo_decode_smem_bytes(int(p.head_dim), int(p.group()), narrow < p.kv_heads, narrow > 0);
  if (dev.smem_per_block_optin > 0 && smem > dev.smem_per_block_optin)
    return fmt::format("the turbo decode kernel asks for {} KiB of shared memory per CTA (its rings, sized for the "
                       "H100); the {} allows {} KiB", (smem + 1023) / 1024, dev.name, dev.smem_per_block_optin / 1024);
  return "";
}

void turbo_run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth, const DeviceInfo&,
               VariantResult& into) {
  const Problem& p = e.problem;
  if (p.phase == Phase::prefill) return turbo_prefill_run(e, v, in, truth, into);
  const ParamValues& params = v.params;
  const std::vector<HeadCache> heads = turbo_host_caches(p, in, params);
  const int64_t steps = params.integer("decode_steps"), prefill = p.kv_len - steps;
  const int slots = turbo_slots(prefill, p.kv_len);
  std::vector<TurboDeviceCache> caches;
  caches.push_back(upload_turbo_cache(heads, slots));
  const size_t copies = input_copies(caches[0].bytes());
  while (caches.size() < copies) caches.push_back(upload_turbo_cache(heads, slots));
  DeviceBuffer q(size_t(in.q.size()) * sizeof(float));
  ATTNLAB_CUDA(cudaMemcpy(q.as<void>(), in.q.data(), q.bytes(), cudaMemcpyHostToDevice));
  const TurboExpArgs exp = turbo_exp_args(params);
  const int chains = turbo_chains_for(p, params, caches[0].args);
  const TurboDecodeOutput once = turbo_decode_once(p, caches[0], q.as<float>(), exp, chains);

  DeviceBuffer o(size_t(p.q_shape().count()) * sizeof(__half)), lse(size_t(p.batch * p.q_heads) * sizeof(float));
  auto args_for = [&](const TurboDeviceCache& c) {
    TurboDecodeArgs a;
    a.cache = c.args, a.exp = exp, a.q = q.as<float>(), a.o = o.as<__half>(), a.lse = lse.as<float>();
    a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
    a.chains = chains, a.scale = static_cast<float>(p.scale());
    return a;
  };
  std::vector<TurboDecodeArgs> args;
  for (const auto& c : caches) args.push_back(args_for(c));
  DeviceBuffer workspace(turbo_decode_workspace_bytes(args[0]));
  for (auto& a : args) a.workspace = workspace.as<float>();
  const auto ms = time_launches([&](size_t i) { ATTNLAB_CUDA(turbo_decode_attend(args[i], nullptr)); }, copies);
  into.kernel = result_of(p, once.o, once.lse, truth, ms, step_bytes(p, caches[0]));
  std::vector<double> bits;
  for (int b : caches[0].head_bits) bits.push_back(double(b));
  into.kernel->probes["kv_bits"] = {{p.batch, p.kv_heads}, bits, {}, "bits", "cache width per KV head on the GPU"};
  into.kernel->probes["kernel.launch"] = labelled(
      {"chains", "input_sets", "timed_runs", "arch"}, {double(chains), double(copies), double(kTimedRuns), 80.0}, "",
      "chains per (batch, KV head) (turbo_chains.h), rotating cache copies, timed launches, kernel generation "
      "(80: mma.sync)");

  if (steps == 0) return;
  // The serving loop: from the prefill's cache, append and attend once per generated token.
  Problem p0 = p;
  p0.kv_len = prefill;
  QKV pre{in.q, Tensor(p0.kv_shape()), Tensor(p0.kv_shape())};
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.kv_heads; ++h) {
      std::memcpy(pre.k.head(b, h).data(), in.k.head(b, h).data(), size_t(prefill * p.head_dim) * sizeof(float));
      std::memcpy(pre.v.head(b, h).data(), in.v.head(b, h).data(), size_t(prefill * p.head_dim) * sizeof(float));
    }
  ParamValues pre_params = params;
  pre_params.set(find_variant("turbo")->params, "decode_steps", 0, "turbo");
  TurboDeviceCache live = upload_turbo_cache(turbo_host_caches(p0, pre, pre_params), slots);
  const std::vector<float> k_rows = appended_rows(p, in.k, steps), v_rows = appended_rows(p, in.v, steps);
  DeviceBuffer dk(k_rows.size() * sizeof(float)), dv(v_rows.size() * sizeof(float));
  ATTNLAB_CUDA(cudaMemcpy(dk.as<void>(), k_rows.data(), dk.bytes(), cudaMemcpyHostToDevice));
  ATTNLAB_CUDA(cudaMemcpy(dv.as<void>(), v_rows.data(), dv.bytes(), cudaMemcpyHostToDevice));
  const int64_t row = p.batch * p.kv_heads * p.head_dim;
  EventTimer timer;
  timer.start(nullptr);
  for (int64_t s = 0; s < steps; ++s) {
    ATTNLAB_CUDA(turbo_decode_append(live.args, dk.as<float>() + s * row, dv.as<float>() + s * row,
                                     params.choice("int_scale") == "up", nullptr));
    live.args.tokens += 1;
    TurboDecodeArgs a = args_for(live);
    a.chains = turbo_chains_for(p, params, live.args);
    a.workspace = workspace.as<float>();
    ATTNLAB_CUDA(turbo_decode_attend(a, nullptr));
  }
  const double step_ms = timer.stop_ms(nullptr) / double(steps);
  into.kernel->probes["decode.steps"] = labelled(
      {"steps", "step_ms", "attend_ms", "step_over_attend"},
      {double(steps), step_ms, into.kernel->median_ms, step_ms / into.kernel->median_ms}, "",
      "the serving loop from the prefill's cache: per generated token, append (+ flush every 64) and attend; mean "
      "step time over the decode_steps steps beside the attention alone at the final length");
}

}  // namespace attnlab::kernels
