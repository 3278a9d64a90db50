// attnlab kernels: TurboAttention's prefill on the GPU, host side (turbo_prefill_host.h).
#include "kernels/turbo/turbo_prefill_host.h"

#include "core/kernel_traits.h"
#include "core/variants/turbo_cache.h"
#include "kernels/common/fp16_upload.h"
#include "kernels/common/poisoned_output.h"
#include "kernels/turbo/turbo_cache_write.h"
#include "kernels/turbo/turbo_head_bits.h"
#include "kernels/turbo/turbo_prefill_sm90.h"

#include <stdexcept>
#include <utility>
#include <vector>

namespace attnlab::kernels {

namespace {

// Alg. 1's query block: one warpgroup of the kernel (core/kernel_traits.h's row: B_r over its warpgroups).
constexpr int kBlockR = find_kernel_traits("turbo", 128, 90)->warpgroup_rows();

// A tensor's FP32 values in a new device buffer (upload_rounded_fp16: its FP16 ones).
DeviceBuffer upload_fp32(const Tensor& t) { return upload(t.values()); }

// Eq. 11–12 over the prefill's keys, into the cache's widths (TurboCacheArgs::bits) — on the device.
TurboHeadBitsArgs ranking_args(const Problem& p, const ParamValues& params, TurboPrefillWork& w) {
  TurboHeadBitsArgs a;
  a.batch = int(p.batch), a.kv_heads = int(p.kv_heads), a.tokens = int(p.kv_len), a.head_dim = int(p.head_dim);
  a.head_stride = p.kv_len * p.head_dim, a.metric = variants::turbo_detail::priority_metric(params);
  a.two_bit_heads = int(params.integer("two_bit_heads"));
  a.bits_lo = int(params.integer("bits_lo")), a.bits_hi = int(params.integer("bits_hi"));
  a.scratch = w.rank_scratch.as<void>(), a.bits = w.cache.bits.as<int>();
  return a;
}

template <class T>
void launch(const Problem& p, const ParamValues& params, const T* q, const T* k, const T* v, TurboPrefillWork& w,
            __half* o, float* lse, bool with_cache, cudaStream_t stream) {
  if (w.gpu_ranking) ATTNLAB_CUDA(turbo_head_bits(ranking_args(p, params, w), k, stream));
  ATTNLAB_CUDA(turbo_cache_write_prefill(w.cache.args, k, v, p.kv_len * p.head_dim, params.choice("int_scale") == "up",
                                         w.scratch.as<void>(), stream,
                                         {w.k8.as<int8_t>(), w.vt8.as<int8_t>(), w.pad, with_cache}));
  ATTNLAB_CUDA(turbo_quantize_q_blocks(q, int(p.batch * p.q_heads), int(p.q_len), int(p.head_dim), kBlockR,
                                       w.q8.as<int8_t>(), w.s_q.as<float>(), stream));
  turbo_prefill_attend(p, w, o, lse, stream);
}

}  // namespace

std::string turbo_prefill_cannot_run(const Problem& p, const ParamValues& params) {
  if (!turbo_prefill_supports(int(p.head_dim)))
    return "no turbo prefill kernel for head_dim " + std::to_string(p.head_dim) + " (compiled: 64, 128)";
  if (params.integer("block_r") != kBlockR || params.integer("block_c") != kTurboBlock)
    return "the prefill kernel's query blocks and KV tiles are 64 (the paper's): set block_r and block_c to 64";
  if (params.choice("p_scale") != "tile") return "the prefill kernel scales P̃ per tile (p_scale = tile)";
  if (params.integer("bits_hi") != 4) return "the kernel writes 2- and 4-bit heads (bits_hi = 4)";
  return "";
}

bool turbo_ranks_on_gpu(const Problem& p, const ParamValues& params) {
  const int64_t n_h = params.integer("two_bit_heads");
  return n_h > 0 && n_h < p.kv_heads && turbo_head_bits_supports(variants::turbo_detail::priority_metric(params));
}

namespace {

// The widths TurboPrefillWork allocates the cache for (turbo_prefill_host.h).
std::vector<int> allocated_widths(const Problem& p, const ParamValues& params,
                                  const std::function<std::vector<int>()>& host_bits) {
  if (turbo_ranks_on_gpu(p, params)) return std::vector<int>(size_t(p.batch * p.kv_heads), int(params.integer("bits_hi")));
  return host_bits();
}

}  // namespace

TurboPrefillWork::TurboPrefillWork(const Problem& p, const ParamValues& params,
                                   const std::function<std::vector<int>()>& host_bits, int slots)
    : cache(allocate_turbo_cache(allocated_widths(p, params, host_bits), p.head_dim,
                                 slots > 0 ? slots : turbo_slots(p.kv_len, p.kv_len), p.kv_len)),
      pad((p.kv_len + kTurboBlock - 1) / kTurboBlock * kTurboBlock),
      exp(turbo_exp_args(params)),
      tma_producer(params.choice("kv_loads") == "tma_producer"),
      gpu_ranking(turbo_ranks_on_gpu(p, params)) {
  const int64_t d = p.head_dim, pairs = p.batch * p.kv_heads, heads = p.batch * p.q_heads;
  k8 = DeviceBuffer(size_t(pairs * pad * d)), vt8 = DeviceBuffer(size_t(pairs * pad * d));
  q8 = DeviceBuffer(size_t(heads * p.q_len * d));
  s_q = DeviceBuffer(size_t(heads * ((p.q_len + kBlockR - 1) / kBlockR)) * sizeof(float));
  scratch = DeviceBuffer(turbo_cache_write_scratch_bytes(cache.args));
  if (gpu_ranking) rank_scratch = DeviceBuffer(turbo_head_bits_scratch_bytes(ranking_args(p, params, *this)));
}

void turbo_prefill_launch(const Problem& p, const ParamValues& params, const float* q, const float* k, const float* v,
                          TurboPrefillWork& w, __half* o, float* lse, bool with_cache, cudaStream_t stream) {
  launch(p, params, q, k, v, w, o, lse, with_cache, stream);
}
void turbo_prefill_launch(const Problem& p, const ParamValues& params, const __half* q, const __half* k,
                          const __half* v, TurboPrefillWork& w, __half* o, float* lse, bool with_cache,
                          cudaStream_t stream) {
  launch(p, params, q, k, v, w, o, lse, with_cache, stream);
}

void turbo_prefill_attend(const Problem& p, TurboPrefillWork& w, __half* o, float* lse, cudaStream_t stream,
                          int32_t* scores) {
  TurboPrefillArgs a;
  a.q8 = w.q8.as<int8_t>(), a.s_q = w.s_q.as<float>(), a.k8 = w.k8.as<int8_t>(), a.vt8 = w.vt8.as<int8_t>();
  a.block_scales = w.cache.args.block_scales, a.slots = w.cache.args.slots, a.pad = int(w.pad);
  a.exp = w.exp, a.o = o, a.lse = lse;
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.q_len = int(p.q_len), a.kv_len = int(p.kv_len), a.head_dim = int(p.head_dim), a.causal = p.causal;
  a.scale = static_cast<float>(p.scale());
  a.tma_producer = w.tma_producer, a.ping_pong = w.ping_pong;
  a.scores = scores;
  ATTNLAB_CUDA(turbo_prefill_forward(a, stream));
}

TurboPrefillOutput turbo_prefill_once(const Problem& p, const QKV& in, const ParamValues& params, int slots,
                                      std::vector<int32_t>* scores, bool fp16_inputs, bool ping_pong) {
  if (const std::string why = turbo_prefill_cannot_run(p, params); !why.empty()) throw std::invalid_argument(why);
  const auto put = fp16_inputs ? upload_rounded_fp16 : upload_fp32;
  const DeviceBuffer q = put(in.q), k = put(in.k), v = put(in.v);
  TurboPrefillWork w(p, params, [&] { return variants::turbo_detail::kv_head_bits(p, in, params); }, slots);
  w.ping_pong = ping_pong;
  const PoisonedOutput out(p);
  if (fp16_inputs) turbo_prefill_launch(p, params, q.as<__half>(), k.as<__half>(), v.as<__half>(), w, out.o(), out.lse());
  else turbo_prefill_launch(p, params, q.as<float>(), k.as<float>(), v.as<float>(), w, out.o(), out.lse());
  if (scores != nullptr) {  // the attention again, dumping its scores (the pre-pass's tiles are still there)
    const size_t n = size_t(p.batch * p.q_heads * p.q_len * p.kv_len);
    DeviceBuffer s(n * sizeof(int32_t));
    ATTNLAB_CUDA(cudaMemset(s.as<void>(), 0x80, s.bytes()));  // 0x80808080: not a score of 8-bit codes at d ≤ 128
    turbo_prefill_attend(p, w, out.o(), out.lse(), nullptr, s.as<int32_t>());
    scores->resize(n);
    ATTNLAB_CUDA(cudaMemcpy(scores->data(), s.as<void>(), s.bytes(), cudaMemcpyDeviceToHost));
  }
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  if (w.gpu_ranking) read_back_turbo_widths(w.cache);
  TurboPrefillOutput r;
  out.read("turbo prefill", r.o, r.lse);
  r.cache = std::move(w.cache);
  return r;
}

}  // namespace attnlab::kernels
