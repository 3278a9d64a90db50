// attnlab kernels: the host side of TurboAttention's decode kernels (turbo_decode_host.h).
#include "kernels/turbo/turbo_decode_host.h"

#include "kernels/common/upload.h"
#include "core/formats/half.h"
#include "core/parallel.h"
#include "core/sas.h"
#include "core/variants/turbo_chains.h"
#include "core/variants/turbo_layout.h"
#include "core/variants/turbo_sas_share.h"
#include "kernels/common/poisoned_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace attnlab::kernels {

namespace {

template <class T>
std::vector<T> download(const T* src, size_t n) {
  std::vector<T> h(n);
  if (n > 0) ATTNLAB_CUDA(cudaMemcpy(h.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

}  // namespace

size_t TurboDeviceCache::bytes() const {
  // Each pair's codes at its width: a cache whose widths the GPU ranked was allocated with room for the widest.
  size_t code_bytes = 0;
  for (const int b : head_bits)
    code_bytes += size_t(args.slots) * 2 * size_t(turbo_layout::code_bytes(kTurboBlock, args.head_dim, b));
  return code_bytes + scale_zero.bytes() + block_scales.bytes() + k_buffer.bytes() + v_buffer.bytes() + universal.bytes();
}

int turbo_slots(int64_t prefill, int64_t tokens) {
  return int((prefill + kTurboBlock - 1) / kTurboBlock + (tokens - prefill) / kTurboBlock + 1);
}

namespace {

// The order the attention takes the pairs in (TurboCacheArgs::pair_order): the 4-bit ones, then the 2-bit ones.
std::vector<int> pair_order_of(const std::vector<int>& bits) {
  std::vector<int> order(bits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return bits[size_t(x)] > bits[size_t(y)]; });
  return order;
}

// Every pair's image back to back, in pair order, with its width and universal scales.
TurboCacheImage assemble(const std::vector<DeviceImage>& images, const std::vector<int>& bits,
                         const std::vector<float>& universal, int64_t d, int slots, int64_t prefill_tokens,
                         int64_t tokens) {
  TurboCacheImage c;
  for (size_t i = 0; i < images.size(); ++i) {
    const DeviceImage& img = images[i];
    c.offsets.push_back(int64_t(c.codes.size()));
    c.codes.insert(c.codes.end(), img.codes.begin(), img.codes.end());
    c.scale_zero.insert(c.scale_zero.end(), img.scale_zero.begin(), img.scale_zero.end());
    c.block_scales.insert(c.block_scales.end(), img.block_scales.begin(), img.block_scales.end());
    c.k_buffer.insert(c.k_buffer.end(), img.k_buffer.begin(), img.k_buffer.end());
    c.v_buffer.insert(c.v_buffer.end(), img.v_buffer.begin(), img.v_buffer.end());
  }
  c.bits = bits, c.universal = universal, c.pair_order = pair_order_of(bits);
  c.shape.wide_pairs = int(std::count(bits.begin(), bits.end(), 4));
  c.shape.pairs = int(images.size()), c.shape.slots = slots, c.shape.head_dim = int(d);
  c.shape.prefill_tokens = int(prefill_tokens), c.shape.tokens = int(tokens);
  return c;
}

TurboDeviceCache upload_images(const TurboCacheImage& h) {
  TurboDeviceCache c;
  c.offsets = h.offsets, c.head_bits = h.bits;
  c.codes = upload(h.codes), c.code_offset = upload(h.offsets), c.scale_zero = upload(h.scale_zero);
  c.block_scales = upload(h.block_scales), c.k_buffer = upload(h.k_buffer), c.v_buffer = upload(h.v_buffer);
  c.universal = upload(h.universal), c.bits = upload(h.bits), c.pair_order = upload(h.pair_order);
  TurboCacheArgs& a = c.args;
  a = h.shape;
  a.codes = c.codes.as<uint8_t>(), a.code_offset = c.code_offset.as<int64_t>();
  a.scale_zero = c.scale_zero.as<int8_t>(), a.block_scales = c.block_scales.as<float>();
  a.k_buffer = c.k_buffer.as<int8_t>(), a.v_buffer = c.v_buffer.as<int8_t>();
  a.universal = c.universal.as<float>(), a.bits = c.bits.as<int>(), a.pair_order = c.pair_order.as<int>();
  return c;
}

}  // namespace

TurboCacheImage turbo_cache_image(const std::vector<HeadCache>& heads, int slots) {
  if (heads.empty()) throw std::logic_error("turbo_cache_image: no heads");
  std::vector<DeviceImage> images;
  std::vector<int> bits;
  std::vector<float> universal;
  for (const HeadCache& h : heads) {
    images.push_back(variants::turbo_detail::device_image(h, kTurboBlock, slots));
    bits.push_back(h.bits);
    universal.push_back(h.k_universal), universal.push_back(h.v_universal);
  }
  const HeadCache& h0 = heads[0];
  const int64_t tokens =
      h0.prefill_tokens + h0.pending() + int64_t(h0.k_blocks.size() - size_t(h0.prefill_blocks)) * kTurboBlock;
  return assemble(images, bits, universal, h0.d, slots, h0.prefill_tokens, tokens);
}

TurboDeviceCache upload_turbo_cache(const std::vector<HeadCache>& heads, int slots) {
  return upload_images(turbo_cache_image(heads, slots));
}

TurboDeviceCache allocate_turbo_cache(const std::vector<int>& bits, int64_t d, int slots, int64_t prefill_tokens) {
  if (bits.empty()) throw std::logic_error("allocate_turbo_cache: no pairs");
  std::vector<DeviceImage> images;
  for (int b : bits) {
    DeviceImage img;
    img.codes.assign(size_t(slots * 2 * turbo_layout::code_bytes(kTurboBlock, d, b)), 0);
    img.scale_zero.assign(size_t(slots * turbo_layout::scale_zero_bytes(d)), 0);
    img.block_scales.assign(size_t(slots * 2), 0.0f);
    img.k_buffer.assign(size_t(kTurboBlock * d), 0), img.v_buffer.assign(size_t(kTurboBlock * d), 0);
    images.push_back(std::move(img));
  }
  return upload_images(
      assemble(images, bits, std::vector<float>(2 * bits.size(), 0.0f), d, slots, prefill_tokens, prefill_tokens));
}

void read_back_turbo_widths(TurboDeviceCache& c) {
  c.head_bits = download(c.bits.as<int>(), size_t(c.args.pairs));
  const std::vector<int> order = pair_order_of(c.head_bits);
  ATTNLAB_CUDA(cudaMemcpy(c.pair_order.as<void>(), order.data(), order.size() * sizeof(int), cudaMemcpyHostToDevice));
  c.args.wide_pairs = int(std::count(c.head_bits.begin(), c.head_bits.end(), 4));
}

DeviceImage download_turbo_head(const TurboDeviceCache& c, int pair) {
  const TurboCacheArgs& a = c.args;
  const int64_t d = a.head_dim, cb = turbo_layout::code_bytes(kTurboBlock, d, c.head_bits[size_t(pair)]);
  DeviceImage img;
  img.codes = download(a.codes + c.offsets[size_t(pair)], size_t(a.slots * 2 * cb));
  img.scale_zero = download(a.scale_zero + int64_t(pair) * a.slots * turbo_layout::scale_zero_bytes(d),
                            size_t(a.slots * turbo_layout::scale_zero_bytes(d)));
  img.block_scales = download(a.block_scales + int64_t(pair) * a.slots * 2, size_t(a.slots * 2));
  img.k_buffer = download(a.k_buffer + int64_t(pair) * kTurboBlock * d, size_t(kTurboBlock * d));
  img.v_buffer = download(a.v_buffer + int64_t(pair) * kTurboBlock * d, size_t(kTurboBlock * d));
  return img;
}

std::vector<HeadCache> turbo_host_caches(const Problem& p, const QKV& in, const ParamValues& params) {
  const std::vector<int> bits = variants::turbo_detail::kv_head_bits(p, in, params);
  const int64_t pairs = p.batch * p.kv_heads;
  std::vector<HeadCache> heads(static_cast<size_t>(pairs));
  const quant::IntScale rule = params.choice("int_scale") == "up" ? quant::IntScale::up : quant::IntScale::nearest;
  const int64_t steps = p.phase == Phase::decode ? params.integer("decode_steps") : 0;
  parallel_for(pairs, [&](int64_t bh) {
    const int64_t b = bh / p.kv_heads, h = bh % p.kv_heads;
    const variants::turbo_detail::DecodeSettings ds{params.integer("block_c"), 119, bits[size_t(bh)], rule,
                                                    params.integer("n_b"), steps};
    heads[size_t(bh)] = variants::turbo_detail::decode_cache(in.k.head(b, h).data(), in.v.head(b, h).data(), p.kv_len,
                                                             p.head_dim, ds);
  });
  return heads;
}

TurboExpArgs turbo_exp_args(const ParamValues& params) {
  TurboExpArgs e;
  e.exact_exp = params.flag("exact_exp");
  e.n_r = int(params.integer("n_r"));
  std::array<double, 4> poly = sas::kPaperPoly;
  if (params.choice("poly") == "refit") {  // the same coefficients the reference takes (sas.h)
    poly = variants::turbo_detail::refit_polynomial();
  }
  for (int i = 0; i < 4; ++i) e.c[i] = static_cast<float>(poly[size_t(i)]);
  for (int k = 0; k <= sas::kMaxRange; ++k) e.lut[k] = static_cast<float>(std::exp(-static_cast<double>(k)));
  e.fp16 = params.choice("sas_precision") == "fp16";
  for (int i = 0; i < 4; ++i) e.c16[i] = formats::round_fp16_from_double(poly[size_t(i)]);
  for (int k = 0; k <= sas::kMaxRange; ++k) e.lut16[k] = formats::round_fp16_from_double(std::exp(-static_cast<double>(k)));
  e.sas_blocks = variants::sas_blocks(params.real("sas_share"));
  return e;
}

int turbo_chains_for(const Problem& p, const ParamValues& params, const TurboCacheArgs& c) {
  // narrow: every pair 2-bit (pair_order puts the wide_pairs 4-bit pairs first), as the reference decides it.
  return int(turbo_chains::chains(params.integer("kv_splits"), p.batch * p.kv_heads, turbo_decode_tiles(c), p.head_dim,
                                   p.group(), c.wide_pairs == 0));
}

TurboDecodeOutput turbo_decode_once(const Problem& p, const TurboDeviceCache& c, const float* q_device,
                                    const TurboExpArgs& exp, int chains) {
  const PoisonedOutput out(p);
  TurboDecodeArgs a;
  a.cache = c.args, a.exp = exp, a.q = q_device, a.o = out.o(), a.lse = out.lse();
  a.batch = int(p.batch), a.q_heads = int(p.q_heads), a.kv_heads = int(p.kv_heads);
  a.chains = chains, a.scale = static_cast<float>(p.scale());
  DeviceBuffer workspace(turbo_decode_workspace_bytes(a));
  a.workspace = workspace.as<float>();
  ATTNLAB_CUDA(turbo_decode_attend(a, nullptr));
  ATTNLAB_CUDA(cudaDeviceSynchronize());
  TurboDecodeOutput r;
  r.chains = chains;
  out.read("turbo decode", r.o, r.lse);
  return r;
}

}  // namespace attnlab::kernels
