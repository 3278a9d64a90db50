// attnlab core: a KIVI cache in its GPU layout (kivi_image.h; the positions are kivi_layout.h's).
#include "core/variants/kivi_image.h"

#include "core/formats/half.h"
#include "core/variants/kivi_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace attnlab::kivi_layout {

Sizes sizes_of(const quant::KiviCache& c) {
  Sizes s;
  const int64_t d = c.channels;
  s.slots = slots_for(c.quantized_tokens);
  s.res_slots = slots_for(c.residual_tokens());
  s.k_groups = k_groups(s.slots, c.group);
  s.code_bytes = s.slots * code_bytes(d, c.bits);
  s.k_param_halves = k_param_halves(s.k_groups, d);
  s.v_param_halves = s.slots * v_param_halves(d, c.group);
  s.residual_halves = s.res_slots * residual_halves(d);
  return s;
}

bool fp32_exact(float s, float z, int bits) {
  for (int q = 0; q < (1 << bits); ++q) {
    // Exact in double: FP16 values are multiples of 2⁻²⁴ below 2¹⁶, so v is one below 2²⁰ — 44 bits of 53.
    const double v = double(q) * double(s) + double(z);
    if (double(float(v)) != v) return false;
  }
  return true;
}

Image device_image(const quant::KiviCache& c) {
  const int64_t d = c.channels, g = c.group, Q = c.quantized_tokens;
  if (!supports(d, c.bits, g))
    throw std::logic_error(fmt::format("kivi layout: no GPU layout for d = {}, bits = {}, group = {}", d, c.bits, g));
  const Sizes s = sizes_of(c);
  Image img;
  img.k_codes.assign(size_t(s.code_bytes), 0);
  img.v_codes.assign(size_t(s.code_bytes), 0);
  img.k_params.assign(size_t(s.k_param_halves), 0);
  img.v_params.assign(size_t(s.v_param_halves), 0);
  img.k_residual.assign(size_t(s.residual_halves), 0);
  img.v_residual.assign(size_t(s.residual_halves), 0);
  const int64_t cb = code_bytes(d, c.bits), vp = v_param_halves(d, g), rh = residual_halves(d);
  for (int64_t t = 0; t < Q; ++t) {
    const int64_t slot = t / kTile, tau = t % kTile;
    for (int64_t ch = 0; ch < d; ++ch) {
      const CodeAt ka = k_code_at(tau, ch, c.bits), va = v_code_at(tau, ch, d, c.bits);
      uint8_t& kb = img.k_codes[size_t(slot * cb + ka.byte)];
      uint8_t& vb = img.v_codes[size_t(slot * cb + va.byte)];
      kb = uint8_t(kb | (c.keys.q[size_t(t * d + ch)] << ka.shift));
      vb = uint8_t(vb | (c.values.q[size_t(t * d + ch)] << va.shift));
    }
    // Value groups: group_channels order t·VG + vg (quantize.h).
    for (int64_t vg = 0; vg < v_groups(d, g); ++vg) {
      const int64_t at = slot * vp + v_scale_at(tau, vg, d, g), src = t * v_groups(d, g) + vg;
      img.v_params[size_t(at)] = formats::fp16_bits(c.values.scale[size_t(src)]);
      img.v_params[size_t(at + 4)] = formats::fp16_bits(c.values.zero[size_t(src)]);
    }
  }
  // Key groups: group_tokens order (t / g)·d + c (quantize.h). s and z are FP16 values already
  // (Spec::fp16_params), so their bit patterns are exact.
  for (int64_t kg = 0; kg < Q / g; ++kg)
    for (int64_t ch = 0; ch < d; ++ch) {
      const int64_t at = k_scale_at(kg, ch, d), src = kg * d + ch;
      img.k_params[size_t(at)] = formats::fp16_bits(c.keys.scale[size_t(src)]);
      img.k_params[size_t(at + 4)] = formats::fp16_bits(c.keys.zero[size_t(src)]);
    }
  // The slot flags: a slot's key groups (slot_first_k_group, slot_k_groups of them, those holding tokens) and
  // its tokens' value groups; a padded tail's s = z = 0 is exact.
  img.slot_exact.assign(size_t(s.slots), 1);
  const int64_t vgroups = v_groups(d, g);
  for (int64_t slot = 0; slot < s.slots; ++slot) {
    bool exact = true;
    for (int64_t kg = slot_first_k_group(slot, g); kg < slot_first_k_group(slot, g) + slot_k_groups(g) && kg < Q / g; ++kg)
      for (int64_t ch = 0; ch < d && exact; ++ch)
        exact = fp32_exact(c.keys.scale[size_t(kg * d + ch)], c.keys.zero[size_t(kg * d + ch)], c.bits);
    for (int64_t t = slot * kTile; t < std::min(Q, (slot + 1) * kTile) && exact; ++t)
      for (int64_t vg = 0; vg < vgroups && exact; ++vg)
        exact = fp32_exact(c.values.scale[size_t(t * vgroups + vg)], c.values.zero[size_t(t * vgroups + vg)], c.bits);
    img.slot_exact[size_t(slot)] = exact ? 1 : 0;
  }
  for (int64_t r = 0; r < c.residual_tokens(); ++r) {
    const int64_t slot = r / kTile, tau = r % kTile;
    for (int64_t ch = 0; ch < d; ++ch) {
      img.k_residual[size_t(slot * rh + k_residual_at(tau, ch))] = formats::fp16_bits(c.k_residual[size_t(r * d + ch)]);
      img.v_residual[size_t(slot * rh + v_residual_at(tau, ch, d))] = formats::fp16_bits(c.v_residual[size_t(r * d + ch)]);
    }
  }
  return img;
}

}  // namespace attnlab::kivi_layout
