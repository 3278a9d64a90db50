// attnlab python: the generic quantizer at every granularity (TurboAttention §2.3, Eq. 3–4;
// core/quant/quantize.h) and the KIVI cache built on it (core/quant/kivi.h), on NumPy arrays.
#include "app/python/blocks.h"
#include "app/python/blocks_args.h"
#include "core/error.h"
#include "core/quant/kivi.h"
#include "core/quant/quantize.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::python {

namespace {

using namespace blocks;
using quant::Granularity;
using quant::Scheme;

constexpr std::array<Name<Granularity>, 6> kGranularities = {{{"tensor", Granularity::tensor},
                                                              {"token", Granularity::token},
                                                              {"channel", Granularity::channel},
                                                              {"block", Granularity::block},
                                                              {"group_tokens", Granularity::group_tokens},
                                                              {"group_channels", Granularity::group_channels}}};
constexpr std::array<Name<Scheme>, 2> kSchemes = {{{"symmetric", Scheme::symmetric},
                                                   {"asymmetric", Scheme::asymmetric}}};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The spec checked by the engine's own rules (quantize.h: bits, block_rows, group, q_max) and returned
// with q_max resolved: quantizing one zero runs exactly those checks, so the binding keeps no second
// copy of them to drift.
quant::Spec engine_checked(const quant::Spec& spec) {
  const float zero = 0.0f;
  return quant::quantize(&zero, 1, 1, spec).spec;
}

// The dict of quantize() for a stack of matrices quantized with one spec (lead: the stack's shape).
py::dict quantized_dict(const Shape& lead, const std::vector<quant::Quantized>& qs) {
  const quant::Quantized& q0 = qs.front();
  const quant::Tile t = quant::tile_of(q0.spec, q0.rows, q0.cols);
  const int64_t row_tiles = ceil_div(q0.rows, t.row_span), col_tiles = ceil_div(q0.cols, t.col_span);
  const int64_t n = q0.rows * q0.cols, groups = row_tiles * col_tiles;
  Shape x_shape = lead, grid = lead;
  x_shape.insert(x_shape.end(), {q0.rows, q0.cols});
  grid.insert(grid.end(), {row_tiles, col_tiles});
  const bool sym = q0.spec.scheme == Scheme::symmetric;

  // Symmetric codes lie in [−q_max, q_max] (int8); asymmetric ones in [0, 2^b − 1], up to 255 (uint8).
  py::array codes = sym ? py::array(py::array_t<int8_t>(x_shape)) : py::array(py::array_t<uint8_t>(x_shape));
  py::array_t<float> scales(grid), zeros(sym ? Shape{0} : grid), gmin(grid), gmax(grid);
  void* c = codes.mutable_data();
  float *s = scales.mutable_data(), *z = zeros.mutable_data(), *lo = gmin.mutable_data(), *hi = gmax.mutable_data();
  int64_t clamped = 0;
  double max_err = 0, mean_err = 0;
  {
    py::gil_scoped_release release;
    for (size_t i = 0; i < qs.size(); ++i) {
      const quant::Quantized& q = qs[i];
      if (sym) std::copy(q.q.begin(), q.q.end(), static_cast<int8_t*>(c) + i * n);
      else std::copy(q.q.begin(), q.q.end(), static_cast<uint8_t*>(c) + i * n);
      std::copy(q.scale.begin(), q.scale.end(), s + i * groups);
      if (!sym) std::copy(q.zero.begin(), q.zero.end(), z + i * groups);
      std::copy(q.group_min.begin(), q.group_min.end(), lo + i * groups);
      std::copy(q.group_max.begin(), q.group_max.end(), hi + i * groups);
      clamped += q.stats.clamped;
      max_err = std::max(max_err, q.stats.max_abs_error);
      mean_err += q.stats.mean_abs_error / double(qs.size());  // equal-sized matrices: the overall mean
    }
  }
  py::dict d;
  d["codes"] = codes;
  d["scales"] = scales;
  if (!sym) d["zeros"] = zeros;
  d["group_min"] = gmin;
  d["group_max"] = gmax;
  d["clamped"] = clamped;
  d["max_abs_error"] = max_err;
  d["mean_abs_error"] = mean_err;
  d["bits"] = q0.spec.bits;
  d["scheme"] = name_of(q0.spec.scheme, kSchemes);
  d["granularity"] = name_of(q0.spec.granularity, kGranularities);
  d["block_rows"] = q0.spec.block_rows;
  d["group"] = q0.spec.group;
  d["q_max"] = static_cast<int64_t>(q0.spec.q_max);  // an integer (quantize.h); 0 when asymmetric
  d["fp16_params"] = q0.spec.fp16_params;
  d["tile"] = py::make_tuple(t.row_span, t.col_span);
  return d;
}

py::dict quantize(const py::object& x, int bits, const std::string& granularity, const std::string& scheme,
                  int64_t block_rows, int64_t group, double q_max, bool fp16_params) {
  const quant::Spec spec = engine_checked({.bits = bits,
                                           .scheme = choose(scheme, "scheme", kSchemes),
                                           .granularity = choose(granularity, "granularity", kGranularities),
                                           .block_rows = block_rows,
                                           .group = group,
                                           .q_max = q_max,
                                           .fp16_params = fp16_params});
  const Matrices m = float_matrices(x, "x", "(..., tokens, channels)");
  std::vector<quant::Quantized> qs(static_cast<size_t>(m.count));
  for_each_matrix(m, "x", [&](int64_t i) { qs[i] = quant::quantize(m.matrix(i), m.rows, m.cols, spec); });
  return quantized_dict(m.lead, qs);
}

// q[key], which must be there.
py::object field(const py::dict& q, const char* key) {
  if (!q.contains(key)) fail_input("q", fmt::format("has no '{}' (give the dict attnlab.quantize returned)", key));
  return q[key];
}

template <class T>
T scalar(const py::dict& q, const char* key, const char* what) {
  try {
    return field(q, key).cast<T>();
  } catch (const py::cast_error&) {
    fail_input(fmt::format("q['{}']", key), fmt::format("must be {}", what));
  }
}

py::array_t<float> dequantize(const py::object& obj) {
  if (!py::isinstance<py::dict>(obj))
    fail_input("q", "must be the dict attnlab.quantize returned, got " +
                        echo(py::str(py::type::of(obj).attr("__name__")).cast<std::string>(), 40));
  const auto q = py::reinterpret_borrow<py::dict>(obj);
  const quant::Spec spec = engine_checked(
      {.bits = scalar<int>(q, "bits", "an integer"),
       .scheme = choose(scalar<std::string>(q, "scheme", "a string"), "q['scheme']", kSchemes),
       .granularity = choose(scalar<std::string>(q, "granularity", "a string"), "q['granularity']", kGranularities),
       .block_rows = scalar<int64_t>(q, "block_rows", "an integer"),
       .group = scalar<int64_t>(q, "group", "an integer"),
       .q_max = scalar<double>(q, "q_max", "a number"),
       .fp16_params = scalar<bool>(q, "fp16_params", "a bool")});
  const bool sym = spec.scheme == Scheme::symmetric;
  const auto top = static_cast<int64_t>(quant::q_top(spec));
  // The codes' shape gives the stack; their range is the spec's (quantize.h: Quantized::q).
  const py::object codes_obj = field(q, "codes");
  if (!py::isinstance<py::array>(codes_obj) || py::reinterpret_borrow<py::array>(codes_obj).ndim() < 2)
    fail_input("q['codes']", "must be an integer NumPy array of at least 2-D (..., tokens, channels)");
  const auto codes = int_array(codes_obj, "q['codes']", sym ? -top : 0, top);
  const Shape x_shape = shape_of(codes);
  Matrices m;  // the stack's shape only: the data are the codes
  m.lead.assign(x_shape.begin(), x_shape.end() - 2);
  m.rows = x_shape[x_shape.size() - 2];
  m.cols = x_shape.back();
  for (py::ssize_t n : m.lead) m.count *= n;
  if (m.rows == 0 || m.cols == 0 || m.count == 0)
    fail_input("q['codes']", fmt::format("shape {} has a zero dimension", shape_text(x_shape)));
  const quant::Tile t = quant::tile_of(spec, m.rows, m.cols);
  const int64_t groups = ceil_div(m.rows, t.row_span) * ceil_div(m.cols, t.col_span);
  const Shape grid = m.with({ceil_div(m.rows, t.row_span), ceil_div(m.cols, t.col_span)});
  const Matrices scales = float_matrices(field(q, "scales"), "q['scales']", "(..., row tiles, column tiles)");
  if (scales.data.ndim() != static_cast<py::ssize_t>(grid.size()) ||
      !std::equal(grid.begin(), grid.end(), scales.data.shape()))
    fail_input("q['scales']", fmt::format("shape must be {}: one per group of {} granularity for codes {}",
                                          shape_text(grid), name_of(spec.granularity, kGranularities),
                                          shape_text(x_shape)));
  Matrices zeros;
  if (!sym) {
    zeros = float_matrices(field(q, "zeros"), "q['zeros']", "(..., row tiles, column tiles)");
    if (zeros.data.ndim() != scales.data.ndim() || !std::equal(grid.begin(), grid.end(), zeros.data.shape()))
      fail_input("q['zeros']", fmt::format("shape must be {}, as q['scales']", shape_text(grid)));
  }

  py::array_t<float> out(x_shape);
  float* o = out.mutable_data();
  const int32_t* c = codes.data();
  const int64_t n = m.rows * m.cols;
  for_each_matrix(m, "q['codes']", [&](int64_t i) {
    quant::Quantized qz;
    qz.rows = m.rows;
    qz.cols = m.cols;
    qz.spec = spec;
    qz.q.assign(c + i * n, c + (i + 1) * n);
    qz.scale.assign(scales.data.data() + i * groups, scales.data.data() + (i + 1) * groups);
    if (!sym) qz.zero.assign(zeros.data.data() + i * groups, zeros.data.data() + (i + 1) * groups);
    quant::dequantize(qz, o + i * n);
  });
  return out;
}

py::dict kivi_quantize(const py::object& k, const py::object& v, int bits, int64_t group, int64_t residual) {
  {  // bits, group and residual by the engine's own rules on a one-token head, before any head
    const float zero = 0.0f;
    quant::kivi_quantize(&zero, &zero, 1, 1, bits, group, residual);
  }
  const Matrices km = float_matrices(k, "k", "(..., tokens, channels)");
  const Matrices vm = float_matrices(v, "v", "(..., tokens, channels)");
  const Shape ks = shape_of(km.data), vs = shape_of(vm.data);
  if (ks != vs) fail_input("v", fmt::format("shape {} must equal k's {}", shape_text(vs), shape_text(ks)));
  std::vector<quant::KiviCache> caches(static_cast<size_t>(km.count));
  py::array_t<float> k_hat(ks), v_hat(ks);
  float *kh = k_hat.mutable_data(), *vh = v_hat.mutable_data();
  const int64_t n = km.rows * km.cols;
  for_each_matrix(km, "k", [&](int64_t i) {
    caches[i] = quant::kivi_quantize(km.matrix(i), vm.matrix(i), km.rows, km.cols, bits, group, residual);
    quant::kivi_dequantize(caches[i], kh + i * n, vh + i * n);
  });
  const quant::KiviCache& c0 = caches.front();
  const int64_t kept = c0.residual_tokens();
  py::array_t<float> k_res(km.with({kept, km.cols})), v_res(km.with({kept, km.cols}));
  std::vector<quant::Quantized> keys, values;
  int64_t bytes = 0;
  for (size_t i = 0; i < caches.size(); ++i) {
    std::copy(caches[i].k_residual.begin(), caches[i].k_residual.end(), k_res.mutable_data() + i * kept * km.cols);
    std::copy(caches[i].v_residual.begin(), caches[i].v_residual.end(), v_res.mutable_data() + i * kept * km.cols);
    bytes += quant::kivi_cache_bytes(caches[i]);
    if (c0.quantized_tokens > 0) {
      keys.push_back(std::move(caches[i].keys));
      values.push_back(std::move(caches[i].values));
    }
  }
  py::dict d;
  d["keys"] = keys.empty() ? py::object(py::none()) : py::object(quantized_dict(km.lead, keys));
  d["values"] = values.empty() ? py::object(py::none()) : py::object(quantized_dict(km.lead, values));
  d["k_residual"] = k_res;
  d["v_residual"] = v_res;
  d["k_hat"] = k_hat;
  d["v_hat"] = v_hat;
  d["quantized_tokens"] = c0.quantized_tokens;
  d["bits"] = bits;
  d["group"] = group;
  d["residual"] = residual;
  d["bytes"] = bytes;
  return d;
}

}  // namespace

void bind_quant(py::module_& m) {
  m.def("quantize", &quantize, py::arg("x"), py::arg("bits") = 8, py::arg("granularity") = "token",
        py::arg("scheme") = "symmetric", py::arg("block_rows") = 64, py::arg("group") = 32, py::arg("q_max") = 0.0,
        py::arg("fp16_params") = false,
        R"(Quantizes x with the engine's generic quantizer (TurboAttention §2.3, Eq. 3–4; core/quant/quantize.h).

Eq. 3: q = clamp(⌈(x − z)/s⌋, lo, hi), x̂ = q·s + z, with per group
  symmetric   s = max|x| / q_max (FP32),  z = 0,    q ∈ [−q_max, q_max]
  asymmetric  s = (max − min) / (2^b − 1), z = min, q ∈ [0, 2^b − 1]
⌈·⌋ rounds half to even after a true FP32 division; a group whose s is not a normal FP32 number (all
zeros, a constant group) gets s = 1.

x: float32 or float16 array (..., tokens, channels), finite; each trailing (tokens, channels) matrix is
    quantized on its own (one head, one block), as the engine quantizes one head at a time.
bits: 2, 4 or 8.
granularity: the groups sharing one scale, a tiling of each (tokens, channels) matrix —
    "tensor" (all), "token" (one row), "channel" (one column), "block" (`block_rows` rows × all channels,
    FlashAttention's B_r tile), "group_tokens" (`group` tokens of one channel, KIVI's keys),
    "group_channels" (`group` channels of one token, KIVI's values). A last group that does not fill
    its tile is shorter: nothing is padded.
scheme: "symmetric" or "asymmetric".
q_max: symmetric only: 0 for 2^(b−1) − 1, or an integer in [1, 2^(b−1) − 1] (119: TurboAttention's INT8).
fp16_params: round s and z to FP16 before use (KIVI stores them in FP16).

Returns a dict: "codes" (..., tokens, channels), int8 (symmetric) or uint8 (asymmetric); "scales" and,
when asymmetric, "zeros", float32 (..., row tiles, column tiles) — the grid of groups, so that for
"token", "channel" and "tensor" codes·scales (+ zeros) broadcasts back to x̂; "group_min",
"group_max" (same grid) the range of x in each group; "clamped" (values clamped in all matrices),
"max_abs_error" and "mean_abs_error" (|x − x̂| over all matrices); and the spec with q_max resolved
("bits", "scheme", "granularity", "block_rows", "group", "q_max", "fp16_params", "tile" = a group's
(rows, cols)), which attnlab.dequantize reads.)");

  m.def("dequantize", &dequantize, py::arg("q"),
        R"(x̂ = q·s + z (Eq. 3) of the dict attnlab.quantize returned, as the engine computes it: two FP32
operations, no FMA (core/quant/quantize.h), so x̂ is bit for bit what quantize measured its errors against.

q: the dict from attnlab.quantize (its codes may be edited; they must stay in the spec's range).
Returns float32 (..., tokens, channels).)");

  m.def("kivi_quantize", &kivi_quantize, py::arg("k"), py::arg("v"), py::arg("bits") = 2, py::arg("group") = 32,
        py::arg("residual") = 128,
        R"(KIVI's KV cache, TurboAttention's baseline (§5.3; core/quant/kivi.h), for each head.

k and v are rounded to FP16 (KIVI's inputs); the leading ⌊(tokens − residual)/group⌋·group tokens are
quantized asymmetrically with FP16 scales and zero points — keys per channel in groups of `group` tokens
(granularity "group_tokens"), values per token in groups of `group` channels ("group_channels") — and the
other tokens stay in FP16.

k, v: float32 or float16 arrays of one shape (..., tokens, channels), finite.
bits: 2, 4 or 8; group ≥ 1; residual ≥ 0.
Returns a dict: "keys", "values" (attnlab.quantize's dict for the quantized tokens, or None when none
are), "k_residual", "v_residual" (..., kept tokens, channels) FP16 values as float32, "k_hat", "v_hat"
(..., tokens, channels) the dequantized cache as attention reads it (x̂ rounded once to FP16),
"quantized_tokens", "bytes" (the cache's size, all heads), "bits", "group", "residual".)");
}

}  // namespace attnlab::python
