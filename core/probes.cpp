#include "core/probes.h"

#include <nlohmann/json.hpp>

namespace attnlab {

using nlohmann::json;

ProbeArray labelled(std::vector<std::string> labels, std::vector<double> values, std::string unit,
                    std::string help) {
  ProbeArray p;
  p.shape = {static_cast<int64_t>(values.size())};
  p.values = std::move(values);
  p.labels = std::move(labels);
  p.unit = std::move(unit);
  p.help = std::move(help);
  return p;
}

json to_json(const ProbeArray& p) {
  json out = {{"shape", p.shape}, {"values", p.values.get()}, {"unit", p.unit}, {"help", p.help}};
  if (!p.labels.empty()) out["labels"] = p.labels;
  return out;
}

ProbeArray probe_from_json(const json& j) {
  ProbeArray p;
  p.shape = j.at("shape").get<std::vector<int64_t>>();
  p.values = j.at("values").get<std::vector<double>>();
  if (j.contains("labels")) p.labels = j.at("labels").get<std::vector<std::string>>();
  p.unit = j.value("unit", "");
  p.help = j.value("help", "");
  return p;
}

}  // namespace attnlab
