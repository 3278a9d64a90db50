#include "core/problem.h"

#include "core/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace attnlab {

const char* to_string(Phase p) { return p == Phase::prefill ? "prefill" : "decode"; }

double Problem::scale() const {
  return softmax_scale > 0.0 ? softmax_scale : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

int64_t Problem::visible_keys(int64_t row) const {
  if (!causal) return kv_len;
  return std::clamp<int64_t>(row + 1 + (kv_len - q_len), 0, kv_len);
}

int64_t Problem::attended_pairs() const {
  if (!causal) return q_len * kv_len;
  int64_t pairs = 0;
  for (int64_t i = 0; i < q_len; ++i) pairs += visible_keys(i);
  return pairs;
}

double Problem::flops() const {
  return 4.0 * static_cast<double>(head_dim) * static_cast<double>(attended_pairs()) *
         static_cast<double>(batch * q_heads);
}

void validate(const Problem& p) {
  auto positive = [](const char* field, int64_t v) {
    if (v <= 0) fail_input(fmt::format("problem.{}", field), fmt::format("must be positive, got {}", v));
  };
  positive("batch", p.batch);
  positive("q_heads", p.q_heads);
  positive("kv_heads", p.kv_heads);
  positive("q_len", p.q_len);
  positive("kv_len", p.kv_len);
  positive("head_dim", p.head_dim);
  // Size arithmetic everywhere else (element counts, bytes, score matrices) stays far from overflow.
  auto bounded = [](const char* what, std::initializer_list<int64_t> factors) {
    int64_t product = 1;
    bool over = false;
    for (int64_t f : factors) over = over || __builtin_mul_overflow(product, f, &product) || product > kMaxElements;
    if (over)
      fail_input("problem", fmt::format("{} = {} exceeds 2^60 elements: too large to hold or address", what,
                                        fmt::join(factors, "·")));
  };
  bounded("batch·q_heads·q_len·head_dim (q)", {p.batch, p.q_heads, p.q_len, p.head_dim});
  bounded("batch·kv_heads·kv_len·head_dim (k, v)", {p.batch, p.kv_heads, p.kv_len, p.head_dim});
  bounded("batch·q_heads·q_len·kv_len (scores)", {p.batch, p.q_heads, p.q_len, p.kv_len});
  if (p.q_heads % p.kv_heads != 0)
    fail_input("problem.kv_heads",
               fmt::format("{} does not divide q_heads ({})", p.kv_heads, p.q_heads));
  if (p.head_dim < kMinHeadDim || p.head_dim > kMaxHeadDim || p.head_dim % kHeadDimMultiple != 0)
    fail_input("problem.head_dim",
               fmt::format("{} is unsupported: must be a multiple of {} in [{}, {}]", p.head_dim,
                           kHeadDimMultiple, kMinHeadDim, kMaxHeadDim));
  if (p.phase == Phase::decode && p.q_len != 1)
    fail_input("problem.q_len", fmt::format("decode attends one query token; got {}", p.q_len));
  if (p.gpus < 1 || p.gpus > kMaxGpus)
    fail_input("problem.gpus", fmt::format("must be 1 to {} (the GPUs of one host), got {}", kMaxGpus, p.gpus));
  if (!(p.softmax_scale >= 0.0) || !std::isfinite(p.softmax_scale))
    fail_input("problem.softmax_scale", "must be a finite number ≥ 0 (0 means 1/√d)");
}

}  // namespace attnlab
