// FireQ §3.2.2's FP16 softmax. See softmax_fp16.h.
#include "core/fireq/softmax_fp16.h"

#include "core/formats/half.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attnlab::fireq {

namespace {

// P̃ = fp16(2^x) for every FP16 x ≤ 0, by the bits of −x (x's bits without the sign): 2^x in double, rounded
// once, the same value as computing it per score, as one lookup (per score, 2^x in double made the FP16 path
// 3.3× the FP32 one's time; with the table 2.2×). −∞ (0x7C00) gives 0; NaN entries are NaN.
const std::vector<float>& exp2_of_nonpositive_half() {
  static const std::vector<float> table = [] {
    std::vector<float> t(0x8000);
    for (uint32_t h = 0; h < 0x8000; ++h) {
      const double x = -static_cast<double>(formats::fp16_value(static_cast<uint16_t>(h)));
      t[h] = formats::round_fp16_from_double(std::exp2(x));
    }
    return t;
  }();
  return table;
}

}  // namespace

float fp16_row_factor(float beta, float tau, bool per_column) {
  return per_column ? beta * kLog2e : (beta * tau) * kLog2e;
}

void scores_to_fp16_log2(RowMatrix<float>& s, const float* g, const float* c) {
  for (int64_t r = 0; r < s.rows(); ++r) {
    float* row = s.data() + r * s.cols();
    for (int64_t j = 0; j < s.cols(); ++j) {
      const float x = g ? row[j] * (g[j] * c[r]) : row[j] * c[r];  // the FP32 products, rounded one by one
      row[j] = formats::round_fp16(x);                             // S₂ = fp16(x)
    }
  }
}

void softmax_step_fp16(OnlineSoftmax& state, RowMatrix<float>& s, const int64_t* visible) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < s.rows(); ++r) {
    const int64_t vis = visible[r];
    float* row = s.data() + r * s.cols();
    std::fill(row + vis, row + s.cols(), 0.0f);
    if (vis == 0) continue;  // this row sees nothing in this tile: state unchanged
    // l. 13: m₂ = max(m₂_old, rowmax S₂), exact in FP16; s = 2^{m₂_old − m₂} in FP32.
    const float m_old = state.m[r];
    const float m_new = std::max(m_old, *std::max_element(row, row + vis));
    const float alpha = m_old == kNegInf ? 0.0f : static_cast<float>(std::exp2(static_cast<double>(m_old - m_new)));
    // l. 15: P̃ = fp16(2^{fp16(S₂ − m₂)}). The difference of two FP16 values is exact in double (≤ 40
    // significant bits), so it is rounded once; 2^x in double, then once to FP16.
    const double shift = m_new == kNegInf ? 0.0 : static_cast<double>(m_new);  // every score −∞: P̃ = 0
    const std::vector<float>& exp2_table = exp2_of_nonpositive_half();
    float sum = 0.0f;
    for (int64_t j = 0; j < vis; ++j) {
      const float diff = formats::round_fp16_from_double(static_cast<double>(row[j]) - shift);  // ≤ 0, or NaN
      row[j] = std::isnan(diff) ? diff : exp2_table[formats::fp16_bits(diff) & 0x7fffu];  // fp16(2^diff)
      sum += row[j];  // ℓ in FP32
    }
    state.l[r] = alpha * state.l[r] + sum;
    state.G.row(r) *= alpha;
    state.m[r] = m_new;
  }
}

void maxima_to_natural(OnlineSoftmax& state) {
  for (int64_t r = 0; r < state.m.size(); ++r) state.m[r] = state.m[r] * kLn2;  // ±∞ stay ±∞
}

}  // namespace attnlab::fireq
