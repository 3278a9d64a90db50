// KV-cache capacity and memory-bound decode throughput (sim/capacity.h) against hand calculations.
#include "core/registry.h"
#include "sim/capacity.h"
#include "tests/catch.h"
#include "tests/support/model_cases.h"
#include "tests/support/input_error.h"

#include <nlohmann/json.hpp>

namespace attnlab::sim {
namespace ATTNLAB_FILE_LOCAL {

using test::request;

TEST_CASE("Llama-3-8B on an H100 at 4096 tokens: FP16 cache, max batch and decode throughput by hand",
          "[sim][capacity]") {
  const LlmConfig m = load_llm("llama-3-8b");
  const GpuSpec g = load_gpu_spec("h100-sxm5");
  // Per layer and token: K and V × 8 KV heads × 128 dims × 2 bytes = 4096 bytes; × 32 layers = 128 KiB.
  const CacheFormat f = cache_format(m, request("flash2"));
  CHECK(f.bytes_per_token == 4096);
  CHECK(f.bytes_per_seq == 0);
  const Capacity c = capacity(m, f, g, 4096);
  CHECK(c.seq_bytes == 32.0 * 4096 * 4096);                   // 512 MiB per sequence
  CHECK(c.weights_bytes == 8.03e9 * 2);
  CHECK(c.workspace_bytes == 0.05 * 80e9);                    // 4 GB > 2 GiB
  CHECK(c.max_batch == 111);                                  // ⌊(80 − 16.06 − 4) GB / 536.87 MB⌋
  const double step = (16.06e9 + 111 * 32.0 * 4096 * 4096) / (3350e9);
  CHECK(c.step_ms == Approx(step * 1e3));
  CHECK(c.tokens_per_s == Approx(111 / step));
}

TEST_CASE("cache formats: quantized caches per token, with their scales, zero points and buffers",
          "[sim][capacity]") {
  const LlmConfig m = load_llm("llama-3-8b");  // 8 KV heads, d = 128: 2048 elements per token and layer
  // turbo, 4 bits, B_c = 64: 2048·½ bytes + 16 vectors × (2·128 + 4)/64 bytes; buffer: 64 INT8 tokens + scales.
  const CacheFormat t = cache_format(m, request("turbo"));
  CHECK(t.bytes_per_token == 1024 + 16 * 260.0 / 64);
  CHECK(t.bytes_per_seq == 64 * 2048 + 16 * 4);
  // Half the KV heads at 2 bits: 3 bits on average.
  CHECK(cache_format(m, request("turbo", {{"two_bit_heads", 4}})).bytes_per_token == 768 + 16 * 260.0 / 64);
  // KIVI 2-bit, g = 32, R = 128: codes + per-group FP16 scale and zero (K per channel, V per token); the R
  // residual tokens are held in FP16 instead of quantized, so they add FP16 minus the quantized rate.
  const CacheFormat k = cache_format(m, request("kivi"));
  const double kivi_rate = 512 + 8 * (4 * 128 / 32.0 + 4 * 4);
  CHECK(k.bytes_per_token == kivi_rate);
  CHECK(k.bytes_per_seq == 128 * (2048 * 2 - kivi_rate));
  CHECK(cache_format(m, request("fireq")).bytes_per_token == 1024 + 16);
  CHECK(cache_format(m, request("int_flash")).bytes_per_token == 2048 + 8 * 4);
  CHECK(cache_format(m, request("int_flash")).bytes_per_seq == 8 * 4);  // S_V: one FP32 per KV head
  CHECK(cache_format(m, request("int_flash", {{"v_fp16", true}})).bytes_per_token == 1024 + 2048 + 8 * 4);
  CHECK(cache_format(m, request("naive")).bytes_per_token == 2048 * 4);  // FP32, as the reference keeps it
  CHECK(cache_format(m, request("fireq", {{"scale_format", "fp32"}})).bytes_per_token == 1024 + 16 * 4);
  // MLA caches one latent of kv_lora_rank + rope_head_dim elements per token and layer.
  const LlmConfig mla = load_llm("deepseek-v2-lite");
  CHECK(mla.attention == "mla");
  CHECK(cache_format(mla, request("flash2")).bytes_per_token == (512 + 64) * 2);
  // Smaller caches fit larger batches and decode faster (memory-bound).
  const GpuSpec g = load_gpu_spec("h100-sxm5");
  const Capacity fp16 = capacity(m, cache_format(m, request("flash2")), g, 8192);
  const Capacity turbo = capacity(m, t, g, 8192);
  CHECK(turbo.max_batch > 3 * fp16.max_batch);
  CHECK(turbo.tokens_per_s > 3 * fp16.tokens_per_s);
}

TEST_CASE("capacity: unknown models and bad contexts are named", "[sim][capacity][bad-input]") {
  CHECK(test::starts(test::input_error([] { load_llm("llama-9"); }), "--model"));
  const LlmConfig m = load_llm("phi-3-mini");
  CHECK(test::starts(test::input_error([&] { capacity(m, cache_format(m, request("flash2")), load_gpu_spec("l40s"), 0); }),
                     "--context"));
  CHECK(all_llms().size() >= 6);
}

TEST_CASE("capacity: weights that leave no room for a cache, and contexts past 2^30, are refused in one line",
          "[sim][capacity][bad-input]") {
  LlmConfig m = load_llm("llama-3-8b");
  const GpuSpec g = load_gpu_spec("h100-sxm5");
  const CacheFormat f = cache_format(m, request("flash2"));
  CHECK(test::starts(test::input_error([&] { capacity(m, f, g, kMaxContext + 1); }), "--context"));
  CHECK(capacity(m, f, g, kMaxContext).max_batch == 0);  // allowed, and nothing fits: the CLI says so
  m.parameters = 38e9;  // 76 GB of FP16 weights + 4 GB of workspace: exactly nothing left of 80 GB
  const std::string e = test::input_error([&] { capacity(m, f, g, 4096); });
  CHECK(test::starts(e, "capacity"));
  CHECK(e.find("llama-3-8b") != std::string::npos);
  CHECK(e.find("h100-sxm5") != std::string::npos);
  m.parameters = 37e9;  // 2 GB left: a batch of 3 at 4096 tokens (512 MiB each)
  CHECK(capacity(m, f, g, 4096).max_batch == 3);
}

}  // namespace
}  // namespace attnlab::sim
