#include "sim/capacity.h"

#include "core/error.h"
#include "core/registry.h"
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

}  // namespace

std::vector<LlmConfig> all_llms() {
  std::vector<LlmConfig> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(models_dir(), ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".json") out.push_back(parse_llm(it->path().string()));
  if (ec) fail_input(echo_path(models_dir()), "cannot list the models folder");
  std::sort(out.begin(), out.end(), [](const LlmConfig& a, const LlmConfig& b) { return a.id < b.id; });
  return out;
}

LlmConfig load_llm(const std::string& id_or_path, const std::string& where) {
  const std::string path = data_file_path(id_or_path, models_dir(), "model", where);
  try {
    return parse_llm(path);
  } catch (const InputError& err) {  // the file's own errors name the file and its field; this names the option
    throw InputError(where + ": " + err.what());
  }
}

CacheFormat cache_format(const LlmConfig& m, const VariantRequest& v) {
  const VariantSpec* spec = find_variant(v.id);
  if (!spec || !spec->storage) fail_input("variant", fmt::format("no cache format for '{}'", echo(v.id)));
  const bool mla = m.attention == "mla";
  // One layer of one sequence as a decode problem: K and V per KV head of head_dim elements, or MLA's one
  // latent vector of kv_lora_rank + rope_head_dim elements per token (stored as the variant stores K, at
  // the KV heads' average width: a head-priority mix applies to the latent as a whole).
  Problem p;
  p.batch = 1, p.q_heads = m.q_heads, p.kv_heads = m.kv_heads, p.q_len = 1, p.kv_len = 1, p.phase = Phase::decode;
  p.head_dim = mla ? m.kv_lora_rank + m.rope_head_dim : m.head_dim;
  CacheFormat f;
  f.variant = v.shown_label();
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

void check_context(int64_t context) {
  if (context < 1 || context > kMaxContext)
    fail_input("--context", fmt::format("{} tokens is outside [1, {}]", context, kMaxContext));
}

Capacity capacity(const LlmConfig& m, const CacheFormat& f, const GpuSpec& g, int64_t context, double weight_bytes) {
  check_context(context);
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
