// attnlab sim: KV-cache capacity and memory-bound decode throughput — the analysis behind
// TurboAttention's throughput claim (Fig. 7a): a smaller cache fits a larger batch, and decode, which
// reads the weights and the whole cache every step, produces more tokens per second.
//
// Per layer and cached token, the cache holds E elements: MHA/GQA 2·kv_heads·head_dim (K and V), MLA
// kv_lora_rank + rope_head_dim (the compressed latent and the decoupled RoPE key, notes §3.2). A
// variant's storage declaration (core/storage.h) says how: codes of b bits plus their scales and zero
// points, and what some keep per sequence (TurboAttention's INT8 decode buffer, reserved at its full
// capacity; KIVI's FP16 residual tokens); the cache of one sequence is counted to the byte.
// Capacity: max batch = ⌊(GPU memory − weights − workspace) / (cache bytes of one sequence)⌋, with the
// workspace fixed at max(2 GiB, 5% of the memory) for activations and the CUDA context (a choice).
// Throughput: a decode step reads the weights once and every sequence's cache once, at the HBM
// bandwidth: step = (weights + batch·cache) / bandwidth, tokens/s = batch / step.
#pragma once

#include "core/config.h"
#include "core/storage.h"
#include "sim/data_fields.h"
#include "sim/gpu_spec.h"

#include <string>
#include <vector>

namespace attnlab::sim {

struct LlmConfig {
  std::string id, name, attention;  // attention: "mha", "gqa" or "mla"
  int64_t layers = 0, hidden_size = 0, q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t kv_lora_rank = 0, rope_head_dim = 0;  // MLA only
  double parameters = 0;
  std::string source;
};

std::string models_dir();  // $ATTNLAB_MODELS, else the source tree's sim/models
// Every field of a model file, declared (sim/data_fields.h); unknown fields are refused.
const FieldTable& llm_fields();
// The model named by an id (models_dir()/<id>.json) or a path to a .json file (sim/data_fields.h's rule);
// every error names `where` first, then lists the known ids, or names the file and the field.
LlmConfig load_llm(const std::string& id_or_path, const std::string& where = "--model");
std::vector<LlmConfig> all_llms();

// A variant's cache for one model, per layer, read from the variant's storage declaration (core/storage.h).
struct CacheFormat {
  std::string variant;
  double bytes_per_token = 0;  // one layer, one cached token (codes and their scales, at whole blocks)
  double bytes_per_seq = 0;    // one layer, per sequence regardless of length (buffers, residual, per-tensor
                               // scales): bytes_per_token·N + bytes_per_seq is the cache at N tokens of whole
                               // blocks and groups
  double reserve = 0;          // of bytes_per_seq, the decode buffer reserved at full capacity with its scales
  std::string how;             // the format in words
  KvCache cache;               // the declaration, for kv_heads KV heads (MLA: the latent, as K)
  int64_t kv_heads = 0;
  bool latent = false;

  // One layer's cache of one sequence at `context` tokens, to the byte (the last block and group may be
  // short; KIVI's residual holds what does not fill a group), with the decode buffer reserved.
  double seq_bytes(int64_t context) const;
};

// The cache format `v` (with its parameters) gives model m, per layer; throws InputError for a variant
// that declares no storage.
CacheFormat cache_format(const LlmConfig& m, const VariantRequest& v);

struct Capacity {
  double weights_bytes = 0, workspace_bytes = 0, free_bytes = 0;
  double seq_bytes = 0;  // one sequence's cache at `context` tokens, all layers
  int64_t max_batch = 0;
  double step_ms = 0, tokens_per_s = 0;  // memory-bound decode at max_batch
};

// Contexts beyond this many tokens are refused (a billion tokens is past every model's window).
inline constexpr int64_t kMaxContext = int64_t(1) << 30;
// The rule for a context: [1, kMaxContext] tokens, else InputError "--context: …" (the CLI's option).
void check_context(int64_t context);

// weight_bytes: bytes per parameter (2 for FP16/BF16 weights). Refused ("capacity: …", naming the model and
// the GPU) when the weights and the workspace leave no memory for a cache; a context outside
// [1, kMaxContext] is refused as "--context: …".
Capacity capacity(const LlmConfig& m, const CacheFormat& f, const GpuSpec& g, int64_t context, double weight_bytes = 2);

}  // namespace attnlab::sim
