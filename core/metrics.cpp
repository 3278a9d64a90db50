#include "core/metrics.h"

#include <limits>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace attnlab {

Metrics compare_to_truth(const Tensor& out, const TensorF64& truth) {
  if (!(out.shape() == truth.shape()))
    throw std::invalid_argument("metrics: output " + out.shape().str() + " vs truth " + truth.shape().str());
  const int64_t n = out.size();
  const double* r = truth.data();
  if (first_nonfinite(out) >= 0 || std::any_of(r, r + n, [](double x) { return !std::isfinite(x); }))
    return no_metrics();
  double diff2 = 0, ref2 = 0, out2 = 0, dot = 0, rel_sum = 0, max_abs = 0;
  const float* o = out.data();
  for (int64_t i = 0; i < n; ++i) {
    const double oi = o[i], ri = r[i], e = std::abs(oi - ri);
    diff2 += e * e;
    ref2 += ri * ri;
    out2 += oi * oi;
    dot += oi * ri;
    rel_sum += e / (std::abs(ri) + kMreFloor);
    max_abs = std::max(max_abs, e);
  }
  Metrics m;
  m.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  m.mre = n > 0 ? rel_sum / static_cast<double>(n) : 0.0;
  m.cosine = (ref2 > 0 && out2 > 0) ? dot / std::sqrt(ref2 * out2) : (ref2 == out2 ? 1.0 : 0.0);
  m.max_abs = max_abs;
  return m;
}

int64_t first_nonfinite(const Tensor& t) {
  const float* x = t.data();
  const float* bad = std::find_if(x, x + t.size(), [](float v) { return !std::isfinite(v); });
  return bad == x + t.size() ? -1 : bad - x;
}

nlohmann::json to_json(const Metrics& m) {
  return {{"rel_l2", m.rel_l2}, {"mre", m.mre}, {"cosine", m.cosine}, {"max_abs", m.max_abs}};
}

Metrics metrics_from_json(const nlohmann::json& j) {
  // to_json writes NaN (no truth, or a non-finite output) as null: read it back as NaN.
  const auto get = [&](const char* key) {
    const nlohmann::json& v = j.at(key);
    return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
  };
  return {get("rel_l2"), get("mre"), get("cosine"), get("max_abs")};
}

Metrics no_metrics() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {nan, nan, nan, nan};
}

}  // namespace attnlab
