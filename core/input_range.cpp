// attnlab core: the input-range rule and the descriptions of the inputs (input_range.h).
#include "core/input_range.h"

#include "core/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <variant>

namespace attnlab {

namespace {

constexpr double kFp32Limit = 0.5 * double(std::numeric_limits<float>::max());  // the rule's FLT_MAX / 2
constexpr double kFp16Max = 65504.0;

// max |x| and max row norm of a (…, N, d) tensor, in double.
void scan(const Tensor& t, double& max_abs, double* max_norm) {
  const int64_t d = t.shape().dim, rows = d > 0 ? t.size() / d : 0;
  const float* x = t.data();
  for (int64_t r = 0; r < rows; ++r) {
    double norm2 = 0;
    for (int64_t c = 0; c < d; ++c) {
      const double v = x[r * d + c];
      max_abs = std::max(max_abs, std::abs(v));
      norm2 += v * v;
    }
    if (max_norm) *max_norm = std::max(*max_norm, std::sqrt(norm2));
  }
}

std::string param_text(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return echo(x, 20);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{:g}", x);
        else return fmt::format("{}", x);
      },
      v);
}

}  // namespace

InputMagnitudes measure_inputs(const QKV& in) {
  InputMagnitudes m;
  scan(in.q, m.q, &m.q_norm);
  scan(in.k, m.k, &m.k_norm);
  scan(in.v, m.v, nullptr);
  return m;
}

std::string data_source(const Experiment& e) {
  if (!e.data.file.empty()) return "data.file " + echo_path(e.data.file);
  std::string params;
  for (const auto& [name, value] : e.data.generator_params.values())
    if (!std::holds_alternative<bool>(value))
      params += fmt::format("{}data.{} = {}", params.empty() ? "" : ", ", name, param_text(value));
  return fmt::format("data ({}{}{})", echo(e.data.generator, 20), params.empty() ? "" : ": ", params);
}

void check_input_range(const Experiment& e, const InputMagnitudes& m) {
  const Problem& p = e.problem;
  const double scale = p.scale(), norms = m.q_norm * m.k_norm;
  const double scores = norms * std::max(scale, 1.0);
  if (scores > kFp32Limit) {
    const double at_default = norms * std::max(1.0 / std::sqrt(double(p.head_dim)), 1.0);
    const bool blame_scale = p.softmax_scale > 0 && at_default <= kFp32Limit;
    fail_input(blame_scale ? "problem.softmax_scale" : data_source(e),
               fmt::format("scores can reach max‖q‖·max‖k‖·max(softmax_scale, 1) = {:.3g}·{:.3g}·{:.3g} = {:.3g}, "
                           "beyond the FP32 range the variants compute them in (refused above FLT_MAX/2 = {:.3g})",
                           m.q_norm, m.k_norm, std::max(scale, 1.0), scores, kFp32Limit));
  }
  const double accumulator = double(p.kv_len) * m.v;
  if (accumulator > kFp32Limit)
    fail_input(data_source(e),
               fmt::format("max|v| = {:.3g} over kv_len = {} keys can reach {:.3g} in the P·V accumulator, beyond the "
                           "FP32 range the variants compute it in (refused above FLT_MAX/2 = {:.3g})",
                           m.v, p.kv_len, accumulator, kFp32Limit));
}

std::string describe_inputs(const Experiment& e, const InputMagnitudes& m) {
  std::string over;
  for (const auto& [name, x] : {std::pair{"q", m.q}, std::pair{"k", m.k}, std::pair{"v", m.v}})
    if (x > kFp16Max) over += fmt::format("{}{}", over.empty() ? "" : ", ", name);
  return fmt::format("max|q| = {:.3g}, max|k| = {:.3g}, max|v| = {:.3g} in {}{}", m.q, m.k, m.v, data_source(e),
                     over.empty() ? "" : fmt::format(" ({} beyond FP16's ±65504)", over));
}

bool beyond_fp16(const InputMagnitudes& m) { return std::max({m.q, m.k, m.v}) > kFp16Max; }

}  // namespace attnlab
