#include "kernels/upload.h"
#include "kernels/flash3_fp8_host.h"

#include "kernels/poisoned_output.h"
#include "kernels/vt_permutation.h"

#include "core/formats/fp8.h"
#include "core/parallel.h"
#include "core/quant/quantize.h"

#include <algorithm>
#include <cmath>

namespace attnlab::kernels {

namespace {

// One head's rows × d values in E4M3 with a scale per block of kFlash3Fp8Block rows: the codes (row-major)
// and the scales, by the reference's rule (core/variants/flash3_fp8.cpp fp8_blocks).
void quantize_head(const float* x, int64_t rows, int64_t d, uint8_t* codes, float* scales) {
  for (int64_t r0 = 0, blk = 0; r0 < rows; r0 += kFlash3Fp8Block, ++blk) {
    const int64_t n = std::min<int64_t>(kFlash3Fp8Block, rows - r0);
    float top = 0;
    for (int64_t i = r0 * d; i < (r0 + n) * d; ++i) top = std::max(top, std::abs(x[i]));
    const float s = quant::scale_for_span(top, formats::kE4M3Max);
    for (int64_t i = r0 * d; i < (r0 + n) * d; ++i) codes[i] = formats::fp8_bits(x[i] / s, formats::Fp8::e4m3);
    scales[blk] = s;
  }
}

}  // namespace

Fp8Inputs upload_fp8(const Problem& p, const QKV& in) {
  const int64_t d = p.head_dim, kv_pad = (p.kv_len + 15) / 16 * 16;
  const int64_t q_heads = p.batch * p.q_heads, kv_heads = p.batch * p.kv_heads;
  const int64_t q_blocks = (p.q_len + kFlash3Fp8Block - 1) / kFlash3Fp8Block;
  const int64_t kv_blocks = (p.kv_len + kFlash3Fp8Block - 1) / kFlash3Fp8Block;
  quant::require_finite(in.q.data(), q_heads * p.q_len, d, "flash3_fp8.q");
  quant::require_finite(in.k.data(), kv_heads * p.kv_len, d, "flash3_fp8.k");
  quant::require_finite(in.v.data(), kv_heads * p.kv_len, d, "flash3_fp8.v");
  Fp8Inputs r;
  r.kv_pad = int(kv_pad);
  r.codes_q.resize(size_t(q_heads * p.q_len * d)), r.codes_k.resize(size_t(kv_heads * p.kv_len * d));
  std::vector<uint8_t> codes_v(size_t(kv_heads * p.kv_len * d)), vt(size_t(kv_heads * d * kv_pad), 0);
  r.scales_q.resize(size_t(q_heads * q_blocks));
  r.scales_k.resize(size_t(kv_heads * kv_blocks)), r.scales_v.resize(size_t(kv_heads * kv_blocks));
  parallel_for(q_heads, [&](int64_t bh) {
    quantize_head(in.q.data() + bh * p.q_len * d, p.q_len, d, r.codes_q.data() + bh * p.q_len * d,
                  r.scales_q.data() + bh * q_blocks);
  });
  parallel_for(kv_heads, [&](int64_t bh) {
    const size_t at = size_t(bh * p.kv_len * d);
    quantize_head(in.k.data() + at, p.kv_len, d, r.codes_k.data() + at, r.scales_k.data() + bh * kv_blocks);
    quantize_head(in.v.data() + at, p.kv_len, d, codes_v.data() + at, r.scales_v.data() + bh * kv_blocks);
    // Vᵀ: row c holds channel c of every key, key n at position 16⌊n/16⌋ + (its place in the group's order).
    int place[16];
    for (int pos = 0; pos < 16; ++pos) place[vt_key_at(pos)] = pos;
    for (int64_t n = 0; n < p.kv_len; ++n)
      for (int64_t c = 0; c < d; ++c)
        vt[size_t((bh * d + c) * kv_pad + n / 16 * 16 + place[n % 16])] = codes_v[at + size_t(n * d + c)];
  });
  r.q = upload(r.codes_q), r.k = upload(r.codes_k), r.vt = upload(vt);
  r.s_q = upload(r.scales_q), r.s_k = upload(r.scales_k), r.s_v = upload(r.scales_v);
  return r;
}

Flash3Fp8Args flash3_fp8_args(const Problem& p, const Fp8Inputs& in, __half* o, float* lse) {
  Flash3Fp8Args a;
  a.q = in.q.as<uint8_t>(), a.k = in.k.as<uint8_t>(), a.vt = in.vt.as<uint8_t>();
  a.s_q = in.s_q.as<float>(), a.s_k = in.s_k.as<float>(), a.s_v = in.s_v.as<float>();
  a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.kv_pad = in.kv_pad, a.head_dim = int(p.head_dim);
  a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  return a;
}

Fp8Output flash3_fp8_once(const Problem& p, const Fp8Inputs& in, bool ping_pong) {
  const PoisonedOutput out_dev(p);
  Flash3Fp8Args a = flash3_fp8_args(p, in, out_dev.o(), out_dev.lse());
  a.ping_pong = ping_pong;
  ATTNLAB_CUDA(flash3_fp8_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  Fp8Output out;
  out_dev.read("flash3_fp8", out.o, out.lse);
  return out;
}

}  // namespace attnlab::kernels
