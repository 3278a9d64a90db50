#include "core/results_sidecars.h"

#include "core/data/npy_array.h"
#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

namespace attnlab {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A label or probe name as part of a file name: letters, digits, '.', '-', '_' kept, anything else '_'.
std::string file_part(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) out += std::isalnum(c) || c == '.' || c == '-' || c == '_' ? char(c) : '_';
  return out.empty() || out[0] == '.' ? "_" + out : out;
}

json summary(const std::vector<double>& v) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  size_t finite = 0;
  for (const double x : v)
    if (std::isfinite(x)) lo = std::min(lo, x), hi = std::max(hi, x), sum += x, ++finite;
  if (finite == 0) return {{"min", nullptr}, {"max", nullptr}, {"mean", nullptr}};
  return {{"min", lo}, {"max", hi}, {"mean", sum / double(finite)}};
}

}  // namespace

json SidecarPlan::probe_json(const ProbeArray& p, const std::string& variant, const std::string& backend,
                             const std::string& name) {
  if (p.values.size() <= kInlineProbeMax) return to_json(p);
  const std::string stem = fmt::format("{}.{}.{}", file_part(variant), backend, file_part(name));
  std::string base = stem + ".npy";
  for (int n = 2; !taken_.insert(base).second; ++n) base = fmt::format("{}~{}.npy", stem, n);  // labels may repeat
  sidecars_.push_back({base, &p});
  json out = {{"npy", dir_ + "/" + base}, {"dtype", data::npy_descr(data::narrowest_exact(p.values))}, {"shape", p.shape},
              {"summary", summary(p.values)}, {"unit", p.unit}, {"help", p.help}};
  if (!p.labels.empty()) out["labels"] = p.labels;
  return out;
}

std::string sidecar_bytes(const Sidecar& s) {
  const std::vector<double>& v = s.probe->values;
  return data::npy_bytes(s.probe->shape, v, data::narrowest_exact(v));
}

ProbeArray probe_from_saved(const json& j, const fs::path& json_dir, const std::string& file, const std::string& what) {
  if (!j.contains("npy")) return probe_from_json(j);
  const std::string npy = j.at("npy").get<std::string>();
  const fs::path rel(npy);
  const bool escapes = rel.empty() || rel.is_absolute() ||
                       std::any_of(rel.begin(), rel.end(), [](const fs::path& part) { return part == ".."; });
  if (escapes)
    fail_input(echo_path(file), fmt::format("{}: sidecar \"{}\" must be a path inside the results folder (relative, "
                                            "no \"..\")", what, echo(npy)));
  ProbeArray p;
  p.shape = j.at("shape").get<std::vector<int64_t>>();
  if (j.contains("labels")) p.labels = j.at("labels").get<std::vector<std::string>>();
  p.unit = j.value("unit", "");
  p.help = j.value("help", "");
  const std::string path = (json_dir / rel).string();
  p.values = ProbeValues::deferred(path, [path, shape = p.shape, what, file] {
    try {
      return data::read_npy_array(path, shape);
    } catch (const InputError& err) {  // "<sidecar>: <rule>", then which probe of which results.json
      throw InputError(fmt::format("{} ({} named in {})", err.what(), what, echo_path(file)));
    }
  });
  return p;
}

}  // namespace attnlab
