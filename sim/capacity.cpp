#include "sim/capacity.h"

#include "core/error.h"
#include "core/registry.h"

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
  const VariantSpec* spec = find_variant(v.id);
  if (!spec || !spec->storage) fail_input("variant", fmt::format("no cache format for '{}'", v.id));
  const bool mla = m.attention == "mla";
  // One layer of one sequence as a decode problem: K and V per KV head of head_dim elements, or MLA's one
  // latent vector of kv_lora_rank + rope_head_dim elements per token (stored as the variant stores K, at
  // the KV heads' average width: a head-priority mix applies to the latent as a whole).
  Problem p;
  p.batch = 1, p.q_heads = m.q_heads, p.kv_heads = m.kv_heads, p.q_len = 1, p.kv_len = 1, p.phase = Phase::decode;
  p.head_dim = mla ? m.kv_lora_rank + m.rope_head_dim : m.head_dim;
  CacheFormat f;
  f.variant = v.label.empty() ? v.id : v.label;
  f.cache = spec->storage(p, v.params).cache;
  f.kv_heads = m.kv_heads;
  f.latent = mla;
  const CacheRate r = cache_rate(f.cache, f.kv_heads);
  const double heads = double(f.kv_heads);
  f.bytes_per_token = mla ? r.k.per_token / heads : r.k.per_token + r.v.per_token;
  f.bytes_per_seq = mla ? r.k.per_sequence / heads : r.k.per_sequence + r.v.per_sequence;
  f.reserve = mla ? r.k.reserve / heads : r.k.reserve + r.v.reserve;
  f.how = describe(f.cache);
  return f;
}

double CacheFormat::seq_bytes(int64_t context) const {
  const CacheBytes b = cache_bytes(cache, kv_heads, context);
  return (latent ? b.k.total() / double(kv_heads) : b.total()) + reserve;
}

Capacity capacity(const LlmConfig& m, const CacheFormat& f, const GpuSpec& g, int64_t context, double weight_bytes) {
  if (context < 1) fail_input("--context", "must be at least 1 token");
  Capacity c;
  const double memory = g.hbm_capacity_gb * 1e9;
  c.weights_bytes = m.parameters * weight_bytes;
  c.workspace_bytes = std::max(2.0 * (1 << 30), 0.05 * memory);
  c.free_bytes = memory - c.weights_bytes - c.workspace_bytes;
  c.seq_bytes = double(m.layers) * f.seq_bytes(context);
  c.max_batch = c.free_bytes > 0 ? static_cast<int64_t>(std::floor(c.free_bytes / c.seq_bytes)) : 0;
  if (c.max_batch > 0) {
    const double step = (c.weights_bytes + double(c.max_batch) * c.seq_bytes) / (g.hbm_bandwidth_gbs * 1e9);
    c.step_ms = step * 1e3;
    c.tokens_per_s = double(c.max_batch) / step;
  }
  return c;
}

}  // namespace attnlab::sim
