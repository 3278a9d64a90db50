#include "sim/capacity.h"

#include "core/error.h"
#include "sim/data_fields.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace attnlab::sim {

namespace fs = std::filesystem;
using nlohmann::json;

std::string models_dir() {
  if (const char* env = std::getenv("ATTNLAB_MODELS")) return env;
  return std::string(ATTNLAB_SOURCE_DIR) + "/sim/models";
}

const FieldTable& llm_fields() {
  static const FieldTable t = {
      FieldSpec::id("id", "the model's id: its file name without .json"),
      FieldSpec::text("name", 100, "the model's name, for tables"),
      FieldSpec::choice("attention", {"mha", "gqa", "mla"}, "multi-head, grouped-query or multi-head latent"),
      FieldSpec::integer("layers", 1, 1000, "transformer layers, each with its own KV cache"),
      FieldSpec::integer("hidden_size", 1, 1 << 20, "model width"),
      FieldSpec::integer("q_heads", 1, 1024, "query heads per layer"),
      FieldSpec::integer("kv_heads", 1, 1024, "key/value heads per layer; divides q_heads"),
      FieldSpec::integer("head_dim", 1, 1024, "dimensions per head"),
      FieldSpec::integer("kv_lora_rank", 1, 1 << 16, "MLA only: the cached latent's width").optional(),
      FieldSpec::integer("rope_head_dim", 1, 1 << 12, "MLA only: the decoupled RoPE key's width").optional(),
      FieldSpec::real("parameters", 1e6, 1e13, "weights, counted in parameters"),
      FieldSpec::text("source", 1000, "where the numbers come from (model card, config.json)"),
  };
  return t;
}

namespace {

LlmConfig parse_llm(const std::string& path) {
  const json j = read_data_file(path);
  const std::string w = where_of(path);
  check_fields(j, llm_fields(), w);
  LlmConfig m;
  m.id = j["id"], m.name = j["name"], m.attention = j["attention"], m.source = j["source"];
  const std::string stem = fs::path(path).stem().string();
  if (m.id != stem) fail_input(w + ".id", fmt::format("'{}' must equal the file name '{}'", m.id, echo(stem)));
  auto count = [&](const char* k) { return j.contains(k) ? j[k].get<int64_t>() : int64_t(0); };
  m.layers = count("layers"), m.hidden_size = count("hidden_size");
  m.q_heads = count("q_heads"), m.kv_heads = count("kv_heads"), m.head_dim = count("head_dim");
  m.kv_lora_rank = count("kv_lora_rank"), m.rope_head_dim = count("rope_head_dim");
  m.parameters = j["parameters"].get<double>();
  if (m.q_heads % m.kv_heads != 0)
    fail_input(w + ".kv_heads", fmt::format("{} does not divide q_heads ({})", m.kv_heads, m.q_heads));
  if (m.attention == "mha" && m.kv_heads != m.q_heads)
    fail_input(w + ".kv_heads", fmt::format("{} differs from q_heads ({}): that is gqa, not mha", m.kv_heads, m.q_heads));
  for (const char* k : {"kv_lora_rank", "rope_head_dim"}) {
    if (m.attention == "mla" && !j.contains(k)) fail_input(w + "." + k, "missing (attention mla caches it)");
    if (m.attention != "mla" && j.contains(k)) fail_input(w + "." + k, "only for attention mla");
  }
  return m;
}

double integer_param(const VariantRequest& v, const char* name) { return double(v.params.integer(name)); }

}  // namespace

std::vector<LlmConfig> all_llms() {
  std::vector<LlmConfig> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(models_dir(), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".json") out.push_back(parse_llm(it->path().string()));
  if (ec) fail_input(echo(models_dir()), "cannot list the models folder");
  std::sort(out.begin(), out.end(), [](const LlmConfig& a, const LlmConfig& b) { return a.id < b.id; });
  return out;
}

LlmConfig load_llm(const std::string& id_or_path, const std::string& where) {
  return parse_llm(data_file_path(id_or_path, models_dir(), "model", where));
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
  if (context < 1 || context > kMaxContext)
    fail_input("--context", fmt::format("{} tokens is outside [1, {}]", context, kMaxContext));
  Capacity c;
  const double memory = g.hbm_capacity_gb * 1e9;
  c.weights_bytes = m.parameters * weight_bytes;
  c.workspace_bytes = std::max(2.0 * (1 << 30), 0.05 * memory);
  c.free_bytes = memory - c.weights_bytes - c.workspace_bytes;
  if (!(c.free_bytes > 0))  // nothing left for a cache: a table of zero batches would hide it
    fail_input("capacity", fmt::format("the weights of {} ({:.1f} GB at {} bytes per parameter) and the {:.1f} GB "
                                       "workspace do not fit the {:.1f} GB of the {}",
                                       echo(m.id), c.weights_bytes / 1e9, weight_bytes, c.workspace_bytes / 1e9,
                                       memory / 1e9, echo(g.id)));
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
