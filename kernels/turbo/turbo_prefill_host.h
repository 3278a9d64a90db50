// attnlab kernels: the host side of TurboAttention's prefill on the GPU — the pre-pass (the compressed
// cache, Alg. 1's INT8 tiles, Q's blocks; turbo_cache_write.h) then the attention (turbo_prefill_sm90.h).
#pragma once

#include "core/params.h"
#include "core/problem.h"
#include "core/tensor.h"
#include "kernels/turbo/turbo_decode_host.h"

#include <functional>
#include <string>
#include <vector>

namespace attnlab::kernels {

// Why the prefill kernel cannot run turbo with these parameters on problem p ("" when it can): d 64 or 128,
// block_r = block_c = 64 (the paper's, and the pre-pass's blocks), p_scale tile; SAS in FP32 or FP16x2.
std::string turbo_prefill_cannot_run(const Problem& p, const ParamValues& params);

// Whether turbo_prefill_launch ranks the KV heads on the GPU (Eq. 11–12, turbo_head_bits.h) for these parameters:
// where n_h leaves a choice (0 < two_bit_heads < kv_heads) and the metric is one the GPU computes bit for bit (not
// entropy). Elsewhere the widths are known without a ranking, or come from the host's.
bool turbo_ranks_on_gpu(const Problem& p, const ParamValues& params);

// What one prefill launches on besides its inputs and outputs: the cache the pre-pass writes, the INT8 tiles and Q
// blocks, the exponential's constants, and — where the GPU ranks the heads — the ranking's scratch.
struct TurboPrefillWork {
  TurboDeviceCache cache;
  DeviceBuffer k8, vt8, q8, s_q, scratch;
  int64_t pad = 0;
  TurboExpArgs exp;
  // The attention's K/V loads (TurboPrefillArgs): from the variant's kv_loads; ping_pong with the producer. The tests
  // set them to compare the three schedules bit for bit.
  bool tma_producer = true, ping_pong = true;
  // The pairs' widths: ranked on the GPU by turbo_prefill_launch where turbo_ranks_on_gpu holds (gpu_ranking: the
  // cache is allocated with room for every pair at bits_hi, the widths known on the host only once read back —
  // read_back_turbo_widths, which turbo_prefill_once does), else host_bits() (the host's ranking, Eq. 11–12), called
  // only then.
  bool gpu_ranking = false;
  DeviceBuffer rank_scratch;
  // slots: cache blocks of room per pair (0: the prefill's own; more leaves room for decode's flushes).
  TurboPrefillWork(const Problem& p, const ParamValues& params, const std::function<std::vector<int>()>& host_bits,
                   int slots = 0);
};

// The GPU's ranking (work.gpu_ranking), the pre-pass (cache and tiles) and Q's blocks, then the attention, from
// q, k, v (FP16 — Alg. 1's inputs, as flash2 reads them — or FP32 for the tests' exact comparison with the
// reference; the problem's shapes) on the device into o (FP16) and lse. with_cache = false: the pre-pass writes the INT8 tiles only (the measurement
// of what the cache write costs) — the cache is left as it was.
void turbo_prefill_launch(const Problem& p, const ParamValues& params, const __half* q, const __half* k,
                          const __half* v, TurboPrefillWork& work, __half* o, float* lse, bool with_cache = true,
                          cudaStream_t stream = nullptr);
void turbo_prefill_launch(const Problem& p, const ParamValues& params, const float* q, const float* k, const float* v,
                          TurboPrefillWork& work, __half* o, float* lse, bool with_cache = true,
                          cudaStream_t stream = nullptr);

// The attention alone, over the tiles a previous turbo_prefill_launch left in work; scores: the tests' dump.
void turbo_prefill_attend(const Problem& p, TurboPrefillWork& work, __half* o, float* lse, cudaStream_t stream = nullptr,
                          int32_t* scores = nullptr);

struct TurboPrefillOutput {
  Tensor o;                // (B, Hq, Nq, d)
  std::vector<float> lse;  // (B, Hq, Nq)
  TurboDeviceCache cache;  // the cache the pre-pass wrote
};
// Every step once from the host's inputs (given to the kernels in FP32, or rounded to FP16 with fp16_inputs),
// with poisoned outputs; the heads ranked on the GPU where turbo_ranks_on_gpu says so (from the keys the kernels
// read: with fp16_inputs, the FP16-rounded keys — the reference ranks the unrounded ones, so a pair whose score
// ties under rounding may take the other width), else on the host. Throws std::invalid_argument where
// turbo_prefill_cannot_run says so.
// scores: when given, the attention's INT32 S of every (head, row, key) it computes (the tests'; SAS FP32),
// (B·Hq, q_len, kv_len), entries it does not compute left at 0x80808080. ping_pong: with the producer (params'
// kv_loads), the consumers' MMA issues alternate (the default) or not — the tests compare the schedules.
TurboPrefillOutput turbo_prefill_once(const Problem& p, const QKV& in, const ParamValues& params, int slots = 0,
                                      std::vector<int32_t>* scores = nullptr, bool fp16_inputs = false,
                                      bool ping_pong = true);

}  // namespace attnlab::kernels
