#include "kernels/fp8/flash3_fp8_host.h"

#include "kernels/common/upload.h"
#include "kernels/common/poisoned_output.h"
#include "kernels/common/vt_permutation.h"

#include "core/parallel.h"
#include "core/quant/fp8_blocks.h"

#include <algorithm>

namespace attnlab::kernels {

Fp8Inputs upload_fp8(const Problem& p, const QKV& in) {
  const int64_t d = p.head_dim, kv_pad = (p.kv_len + 15) / 16 * 16;
  const int64_t q_heads = p.batch * p.q_heads, kv_heads = p.batch * p.kv_heads;
  const int64_t q_blocks = (p.q_len + kFlash3Fp8Block - 1) / kFlash3Fp8Block;
  const int64_t kv_blocks = (p.kv_len + kFlash3Fp8Block - 1) / kFlash3Fp8Block;
  Fp8Inputs r;
  r.kv_pad = int(kv_pad);
  std::vector<uint8_t> codes_q(size_t(q_heads * p.q_len * d)), codes_k(size_t(kv_heads * p.kv_len * d));
  std::vector<uint8_t> codes_v(codes_k.size()), vt(size_t(kv_heads * d * kv_pad), 0);
  r.scales_q.resize(size_t(q_heads * q_blocks));
  r.scales_k.resize(size_t(kv_heads * kv_blocks)), r.scales_v.resize(size_t(kv_heads * kv_blocks));
  // One head's codes and scales into the uploads, by the reference's rule (core/quant/fp8_blocks.h).
  auto quantize_head = [](const float* x, int64_t rows, int64_t d, const char* where, uint8_t* codes, float* scales) {
    const quant::Fp8BlockCodes c = quant::fp8_block_codes(x, rows, d, kFlash3Fp8Block, where);
    std::copy(c.bits.begin(), c.bits.end(), codes);
    std::copy(c.scale.begin(), c.scale.end(), scales);
  };
  parallel_for(q_heads, [&](int64_t bh) {
    quantize_head(in.q.data() + bh * p.q_len * d, p.q_len, d, "flash3_fp8.q", codes_q.data() + bh * p.q_len * d,
                  r.scales_q.data() + bh * q_blocks);
  });
  parallel_for(kv_heads, [&](int64_t bh) {
    const size_t at = size_t(bh * p.kv_len * d);
    quantize_head(in.k.data() + at, p.kv_len, d, "flash3_fp8.k", codes_k.data() + at, r.scales_k.data() + bh * kv_blocks);
    quantize_head(in.v.data() + at, p.kv_len, d, "flash3_fp8.v", codes_v.data() + at, r.scales_v.data() + bh * kv_blocks);
    // Vᵀ: row c holds channel c of every key, key n at position 16⌊n/16⌋ + vt_position_of(n).
    for (int64_t n = 0; n < p.kv_len; ++n)
      for (int64_t c = 0; c < d; ++c)
        vt[size_t((bh * d + c) * kv_pad + n / 16 * 16 + vt_position_of(int(n)))] = codes_v[at + size_t(n * d + c)];
  });
  r.q = upload(codes_q), r.k = upload(codes_k), r.vt = upload(vt);
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

Fp8Output flash3_fp8_once(const Problem& p, const Fp8Inputs& in, bool ping_pong, bool tma_producer) {
  const PoisonedOutput out_dev(p);
  Flash3Fp8Args a = flash3_fp8_args(p, in, out_dev.o(), out_dev.lse());
  a.ping_pong = ping_pong, a.tma_producer = tma_producer;
  ATTNLAB_CUDA(flash3_fp8_forward(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  Fp8Output out;
  out_dev.read("flash3_fp8", out.o, out.lse);
  return out;
}

}  // namespace attnlab::kernels
