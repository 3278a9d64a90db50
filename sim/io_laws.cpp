#include "sim/io_laws.h"

#include <algorithm>

namespace attnlab::sim {

TensorBytes naive_hbm_bytes(const Problem& p, double e) {
  const double heads = double(p.batch * p.q_heads), d = double(p.head_dim);
  const double s = heads * double(p.q_len) * double(p.kv_len) * e;
  return {{"q", heads * p.q_len * d * e}, {"k", heads * p.kv_len * d * e}, {"v", heads * p.kv_len * d * e},
          {"o", heads * p.q_len * d * e}, {"s", 2 * s},                    {"p", 2 * s}};
}

TensorBytes flash_hbm_bytes(const Problem& p, int64_t Br, int64_t Bc, double e) {
  const double heads = double(p.batch * p.q_heads), d = double(p.head_dim);
  // Keys read by each row block: its tiles cover [0, ⌈visible/B_c⌉·B_c) clipped to N_kv.
  double keys = 0;
  for (int64_t row0 = 0; row0 < p.q_len; row0 += Br) {
    const int64_t last = std::min(row0 + Br, p.q_len) - 1;
    const int64_t tiles = (p.visible_keys(last) + Bc - 1) / Bc;
    keys += double(std::min(tiles * Bc, p.kv_len));
  }
  return {{"q", heads * p.q_len * d * e}, {"k", heads * keys * d * e}, {"v", heads * keys * d * e},
          {"o", heads * p.q_len * d * e}, {"lse", heads * p.q_len * 4.0}};
}

TensorBytes naive_backward_hbm_bytes(const Problem& p, double e) {
  const double heads = double(p.batch * p.q_heads), d = double(p.head_dim);
  const double nn = heads * double(p.q_len) * double(p.kv_len) * e;
  const double q = heads * p.q_len * d * e, kv = heads * p.kv_len * d * e;
  return {{"q", q},      {"k", kv},      {"v", kv},      {"do", q},      {"dq", q},
          {"dk", kv},    {"dv", kv},     {"p", 2 * nn},  {"dp", 2 * nn}, {"ds", 3 * nn}};
}

TensorBytes flash_backward_hbm_bytes(const Problem& p, int64_t Br, int64_t Bc, double e) {
  const double heads = double(p.batch * p.q_heads), d = double(p.head_dim);
  // Query rows loaded over the whole loop nest: for each KV block, every row block that sees any of
  // its keys (causal: a row block sees block j when its last row's visible prefix reaches past j·B_c).
  double rows = 0;
  for (int64_t col0 = 0; col0 < p.kv_len; col0 += Bc)
    for (int64_t row0 = 0; row0 < p.q_len; row0 += Br) {
      const int64_t last = std::min(row0 + Br, p.q_len) - 1;
      if (p.visible_keys(last) > col0) rows += double(std::min(Br, p.q_len - row0));
    }
  const double per_pass = heads * rows * d * e;
  const double kv = heads * p.kv_len * d * e;
  return {{"q", per_pass},  {"o", per_pass},  {"do", per_pass}, {"dq", 2 * per_pass},
          {"lse", heads * rows * 4.0},        {"k", kv},        {"v", kv},
          {"dk", kv},       {"dv", kv}};
}

}  // namespace attnlab::sim
