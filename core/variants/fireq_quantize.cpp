// Shared steps of `fireq`: the keys' smoothing and the queries' Eq. 2. See fireq_quantize.h.
#include "core/variants/fireq_quantize.h"

#include "core/fireq/rope_smoothing.h"

namespace attnlab::variants::fireq_detail {

SmoothedKeys smooth_keys(const float* k, int64_t n, int64_t d, const Settings& st) {
  SmoothedKeys r;
  switch (st.smoothing) {  // §3.2.1
    case Smoothing::rpn_crs: {
      fireq::TwoStageScales ts = fireq::two_stage_scales(k, n, d, st.sp);
      r.s = std::move(ts.combined.per_channel);
      r.outliers = std::move(ts.outlier_pairs);
      break;
    }
    case Smoothing::crs:
      r.outliers = fireq::select_outlier_pairs(k, n, d, st.sp.top_k);
      r.s = fireq::crs_scales(k, n, d, r.outliers, st.sp.beta).per_channel;
      break;
    case Smoothing::rpn: r.s = fireq::rpn_scales(k, n, d, st.sp.alpha).per_channel; break;
    case Smoothing::none: r.s.assign(static_cast<size_t>(d), 1.0f); break;
  }
  r.k.assign(k, k + n * d);
  if (st.smoothing != Smoothing::none) fireq::divide_channels(r.k.data(), n, d, fireq::PairScales{r.s});
  return r;
}

fireq::TokenFp8 quantize_query(float* q, int64_t rows, int64_t d, const std::vector<float>& s, bool smooth) {
  if (smooth)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < d; ++c) q[r * d + c] *= s[size_t(c)];  // Q̃ = Q·s
  return fireq::quantize_token_fp8(q, rows, d);                      // Eq. 2, in place
}

}  // namespace attnlab::variants::fireq_detail
