// attnlab sim: the cost model of one problem across the GPUs of a host (context parallelism; DESIGN.md "Several
// GPUs") — the one-GPU model (cost_model.h) for each block a GPU attends, plus the link term.
//
// Prefill, a ring (core/context_parallel.h's plan): at step s every GPU attends the K/V shard in hand (one launch
// per visible (query chunk, key chunk) block, predicted as a one-GPU problem of that block's shape) and merges the
// block's partial (O, logsumexp) into its running result; meanwhile, for s < P − 1, it sends that shard on to the
// next GPU and receives the previous GPU's, each direction of a link at once:
//   X_s = latency + bytes(shard in the variant's storage format) / (link bandwidth per direction · efficiency)
//   T_s = max(max over GPUs of C_{r,s}, X_s)       (the transfer hides under the compute where it is shorter)
//   T   = Σ_s T_s,    scaling efficiency = T(1 GPU) / (P · T)
// The GPUs move in lock step: a step starts when its shard has arrived, and every GPU's shard comes from the
// slowest step before it. Idle time per GPU and step: T_s − C_{r,s}.
// Decode: the cache sharded by tokens; every GPU runs the one-GPU decode on its shard, then the partials (O in
// FP16 and the logsumexp per query row) travel to GPU 0, which merges them (one launch, their bytes read once):
//   T = max_r C_r + latency + (P − 1) · partial bytes / link + merge.
// What travels is K and V as the variant stores them (its cache declaration, core/storage.h: FP16 for flash2, the
// INT8 tiles and their scales for int_flash, E4M3 for flash3_fp8, INT4 for fireq, TurboAttention's and KIVI's
// caches), so a compressed format divides the link bytes as it divides the HBM bytes.
#pragma once

#include "core/config.h"
#include "core/context_parallel.h"
#include "sim/cost_model.h"

#include <string>
#include <vector>

namespace attnlab::sim {

// One GPU's share of one ring step (decode: step 0 the attention, step 1 the exchange and merge).
struct RingSlot {
  int gpu = 0, step = 0;
  double compute_ms = 0;  // its blocks' attention and the merges into its running result
  double send_ms = 0;     // its shard (decode: its partial) on the link to the next GPU (GPU 0)
  double recv_ms = 0;     // the previous GPU's shard arriving
  double idle_ms = 0;     // the step's time it waits: for the slowest GPU, or for the link
  double link_bytes = 0;  // sent during the step
  int64_t pairs = 0;      // (query, key) pairs it attends in the step
};

struct MultiGpuPrediction {
  int gpus = 1;
  std::string link;       // "NVLink" or "PCIe": the link the model used
  double link_gbs = 0;    // per direction, after the efficiency
  double time_ms = 0;     // the whole run on `gpus` GPUs
  double one_gpu_ms = 0;  // the same problem on one GPU (cost_model.h)
  double scaling_efficiency = 0;  // one_gpu_ms / (gpus · time_ms)
  double link_bytes = 0;          // over every link, the whole run
  double hbm_bytes_per_gpu = 0;   // DRAM bytes of the busiest GPU
  double imbalance = 1;           // the plan's: max over GPUs of the attended pairs ÷ their mean
  std::string bound;              // "compute" (every transfer hidden) or "link" (some step waits on its shard)
  int link_bound_steps = 0;
  std::vector<TimeTerm> terms;     // time_ms term by term (cost_model.h kTimeTerms: gpu_attention, link, gpu_merge)
  std::vector<RingSlot> timeline;  // step-major: [step · gpus + gpu]
  std::vector<std::string> explain;
};

// A link as the model uses it: the per-direction rate NCCL reaches (the spec's rate × its efficiency) and a latency
// per transfer.
struct LinkRate {
  std::string name;  // "NVLink" or "PCIe"
  double bytes_per_s = 0, latency_s = 0;
};
// NVLink where the GPU has it, else PCIe (every host has it). Throws InputError where the spec has no links section.
LinkRate link_of(const GpuSpec& gpu);

// The same prediction over another link: every link-dependent part — the sends, receives and waits of each slot, the
// steps' times and the total, the terms, the bound, the scaling efficiency — from the slots' compute and link bytes
// (which do not depend on the link). predict_context_parallel ends with it; `attnlab calibrate` fits a link's
// efficiency and latency through it without predicting the blocks again.
MultiGpuPrediction over_link(MultiGpuPrediction m, Phase phase, const LinkRate& link);

// Why `gpu`'s spec has no multi-GPU model ("" when it has one: a links section).
std::string links_missing(const GpuSpec& gpu);

// The model of p (prefill or decode) across `gpus` GPUs of `gpu`'s kind; balance: the ring's split of a causal
// prefill (core/context_parallel.h). Throws InputError when the spec has no links section, or the variant no
// schedule.
MultiGpuPrediction predict_context_parallel(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, int gpus,
                                            cp::Balance balance, const ModelOptions& o = {});

// Where the links bind: the longest sequence at which p's run across `gpus` GPUs still waits on the link in some step
// (the model's bound "link"). A ring step's transfer grows with N and its attention with N² (a decode's partials do
// not grow at all), so the links bind below a crossover and are hidden above it; a compressed K/V format moves the
// crossover down by its bytes. (At the very shortest splits a step's fixed costs — its launches — can outlast its few
// bytes again: the crossover is the longest link-bound length, not the start of a range.) Found by the model itself:
// N doubled from the shortest split (2 · gpus · kShardAlign tokens), then kCrossoverScanTokens itself, stopping at the first
// hidden length after a link-bound one, then bisected between the two to kShardAlign.
inline constexpr int64_t kCrossoverScanTokens = int64_t{1} << 20;  // 1M tokens, the longest the presets ask about
struct LinkCrossover {
  int64_t tokens = 0;        // the longest link-bound length; 0: none scanned is
  bool whole_scan = false;   // link-bound at kCrossoverScanTokens too: the links bind at every length scanned
};
LinkCrossover link_crossover(const Problem& p, const VariantRequest& v, const GpuSpec& gpu, int gpus,
                             cp::Balance balance, const ModelOptions& o = {});

}  // namespace attnlab::sim
