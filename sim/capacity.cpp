#include "sim/capacity.h"

#include "core/error.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace attnlab::sim {

namespace fs = std::filesystem;
using nlohmann::json;

std::string models_dir() {
  if (const char* env = std::getenv("ATTNLAB_MODELS")) return env;
  return std::string(ATTNLAB_SOURCE_DIR) + "/sim/models";
}

namespace {

LlmConfig parse_llm(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(path, "cannot open the model configuration");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    fail_input(path, fmt::format("not valid JSON (byte {})", e.byte));
  }
  LlmConfig m;
  auto count = [&](const char* k, bool required) -> int64_t {
    if (!j.contains(k)) {
      if (required) fail_input(path + "." + k, "missing");
      return 0;
    }
    if (!j[k].is_number_integer() || j[k].get<int64_t>() < 1) fail_input(path + "." + k, "must be a positive integer");
    return j[k].get<int64_t>();
  };
  for (const char* k : {"id", "name", "attention", "source"})
    if (!j.contains(k) || !j[k].is_string()) fail_input(path + "." + k, "expected a string");
  m.id = j["id"], m.name = j["name"], m.attention = j["attention"], m.source = j["source"];
  if (m.attention != "mha" && m.attention != "gqa" && m.attention != "mla")
    fail_input(path + ".attention", "must be mha, gqa or mla");
  m.layers = count("layers", true), m.hidden_size = count("hidden_size", true);
  m.q_heads = count("q_heads", true), m.kv_heads = count("kv_heads", true), m.head_dim = count("head_dim", true);
  m.kv_lora_rank = count("kv_lora_rank", m.attention == "mla");
  m.rope_head_dim = count("rope_head_dim", m.attention == "mla");
  if (!j.contains("parameters") || !j["parameters"].is_number() || !(j["parameters"].get<double>() > 0))
    fail_input(path + ".parameters", "must be a positive number");
  m.parameters = j["parameters"];
  return m;
}

double integer_param(const VariantRequest& v, const char* name) { return double(v.params.integer(name)); }

}  // namespace

std::vector<LlmConfig> all_llms() {
  std::vector<LlmConfig> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(models_dir(), ec); !ec && it != fs::directory_iterator(); ++it)
    if (it->path().extension() == ".json") out.push_back(parse_llm(it->path().string()));
  std::sort(out.begin(), out.end(), [](const LlmConfig& a, const LlmConfig& b) { return a.id < b.id; });
  return out;
}

LlmConfig load_llm(const std::string& id) {
  const fs::path f = fs::path(models_dir()) / (id + ".json");
  if (fs::exists(f)) return parse_llm(f.string());
  std::vector<std::string> ids;
  for (const auto& m : all_llms()) ids.push_back(m.id);
  fail_input("--model", fmt::format("unknown model '{}' (known: {})", id, fmt::join(ids, ", ")));
}

CacheFormat cache_format(const LlmConfig& m, const VariantRequest& v) {
  const bool mla = m.attention == "mla";
  // Vectors per token and layer and their length: K and V per KV head, or MLA's one latent vector.
  const double vectors = mla ? 1.0 : 2.0 * double(m.kv_heads);
  const double len = mla ? double(m.kv_lora_rank + m.rope_head_dim) : double(m.head_dim);
  const double elements = vectors * len;
  CacheFormat f;
  f.variant = v.label.empty() ? v.id : v.label;
  if (v.id == "naive" || v.id == "flash2") {
    f.bytes_per_token = elements * 2;
    f.how = "FP16: 2 bytes per element";
  } else if (v.id == "int_flash") {
    f.bytes_per_token = elements * 1 + (mla ? 1.0 : vectors / 2) * 4;
    f.how = "INT8 K and V; one FP32 scale per key token (V's scale is per tensor)";
  } else if (v.id == "flash3_fp8") {
    f.bytes_per_token = elements * 1 + vectors * 4 / integer_param(v, "block_c");
    f.how = "FP8 E4M3 K and V; one FP32 scale per block of B_c tokens";
  } else if (v.id == "turbo") {
    const double lo = integer_param(v, "bits_lo"), hi = integer_param(v, "bits_hi");
    const double n_h = std::min(integer_param(v, "two_bit_heads"), double(m.kv_heads));
    const double bits = (n_h * lo + (double(m.kv_heads) - n_h) * hi) / double(m.kv_heads);
    const double bc = integer_param(v, "block_c");
    f.bytes_per_token = elements * bits / 8 + vectors * (2 * len + 4) / bc;
    f.bytes_per_seq = integer_param(v, "n_b") * elements * 1 + vectors * 4;
    f.how = fmt::format("progressive cache at {:.2f} bits on average, INT8 s_int/z_int per channel and FP32 s per "
                        "block of B_c; plus the INT8 decode buffer of n_b tokens per sequence",
                        bits);
  } else if (v.id == "kivi") {
    const double bits = integer_param(v, "bits"), g = integer_param(v, "group");
    // K: FP16 scale + zero per channel per g tokens = 4·len/g per token; V: per token per ⌈len/g⌉ channel groups.
    f.bytes_per_token = elements * bits / 8 + (vectors / 2) * (4 * len / g + 4 * std::ceil(len / g));
    f.bytes_per_seq = integer_param(v, "residual") * elements * 2;
    f.how = "b-bit codes, FP16 scale and zero per group, the residual tokens in FP16 per sequence";
  } else if (v.id == "fireq") {
    f.bytes_per_token = elements * 0.5 + vectors * 1;
    f.how = "INT4 K and V with one FP8 E4M3 scale per token";
  } else {
    fail_input("variant", fmt::format("no cache format for '{}'", v.id));
  }
  return f;
}

Capacity capacity(const LlmConfig& m, const CacheFormat& f, const GpuSpec& g, int64_t context, double weight_bytes) {
  if (context < 1) fail_input("--context", "must be at least 1 token");
  Capacity c;
  const double memory = g.hbm_capacity_gb * 1e9;
  c.weights_bytes = m.parameters * weight_bytes;
  c.workspace_bytes = std::max(2.0 * (1 << 30), 0.05 * memory);
  c.free_bytes = memory - c.weights_bytes - c.workspace_bytes;
  c.seq_bytes = double(m.layers) * (f.bytes_per_token * double(context) + f.bytes_per_seq);
  c.max_batch = c.free_bytes > 0 ? static_cast<int64_t>(std::floor(c.free_bytes / c.seq_bytes)) : 0;
  if (c.max_batch > 0) {
    const double step = (c.weights_bytes + double(c.max_batch) * c.seq_bytes) / (g.hbm_bandwidth_gbs * 1e9);
    c.step_ms = step * 1e3;
    c.tokens_per_s = double(c.max_batch) / step;
  }
  return c;
}

}  // namespace attnlab::sim
