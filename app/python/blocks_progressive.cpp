// attnlab python: TurboAttention's blockwise progressive quantization (§3.1, Eq. 9–10; App. A Alg. 1–2;
// core/quant/progressive.h) on NumPy arrays: FP → INT8 → INT4/INT2 and back to INT8.
#include "app/python/blocks.h"
#include "app/python/blocks_args.h"
#include "core/error.h"
#include "core/quant/progressive.h"

#include <fmt/format.h>

#include <algorithm>

namespace attnlab::python {

namespace {

using namespace blocks;
using quant::IntScale;
using quant::ProgressiveBlock;

constexpr std::array<Name<IntScale>, 2> kIntScales = {{{"nearest", IntScale::nearest}, {"up", IntScale::up}}};
constexpr int64_t kInt8Max = 127;  // step 1's symmetric INT8 range, [−127, 127]

// The stack shape of an integer x (..., rows, cols), checked as float_matrices checks a float one.
Matrices int_stack(const py::array& a, const char* name) {
  const Shape shape = shape_of(a);
  if (a.ndim() < 2)
    fail_input(name, fmt::format("must be at least 2-D (..., tokens, channels), got shape {}", shape_text(shape)));
  Matrices m;
  m.lead.assign(shape.begin(), shape.end() - 2);
  m.rows = shape[shape.size() - 2];
  m.cols = shape.back();
  for (py::ssize_t n : shape)
    if (n == 0) fail_input(name, fmt::format("shape {} has a zero dimension", shape_text(shape)));
  for (py::ssize_t n : m.lead) m.count *= n;
  return m;
}

// scale8 for INT8 input: None (1: step 2 never reads it, it is only kept as the block's s_K), one number
// for every block, or an array of the stack's shape (...). The engine checks each is finite and > 0.
std::vector<float> block_scales(const py::object& scale8, const Matrices& m) {
  if (scale8.is_none()) return std::vector<float>(static_cast<size_t>(m.count), 1.0f);
  if (!py::isinstance<py::array>(scale8)) {
    try {
      return std::vector<float>(static_cast<size_t>(m.count), scale8.cast<float>());
    } catch (const py::cast_error&) {
      fail_input("scale8", "must be None, a number or a float32 array of x's leading shape");
    }
  }
  const py::array_t<float> s = float_array(scale8, "scale8");
  if (shape_of(s) != m.lead)
    fail_input("scale8",
               fmt::format("shape {} must be x's leading shape {}", shape_text(shape_of(s)), shape_text(m.lead)));
  return std::vector<float>(s.data(), s.data() + s.size());
}

py::dict block_dict(const Matrices& m, const std::vector<ProgressiveBlock>& bs) {
  const int64_t n = m.rows * m.cols, d = m.cols;
  py::array_t<int8_t> q8(m.with({m.rows, m.cols}));
  py::array_t<uint8_t> codes(m.with({m.rows, m.cols}));
  py::array_t<float> scale8(m.lead);
  py::array_t<int16_t> s_int(m.with({d})), z_int(m.with({d})), q8_min(m.with({d})), q8_max(m.with({d}));
  int64_t clamped8 = 0, clamped = 0, saturated = 0, bytes = 0;
  for (size_t i = 0; i < bs.size(); ++i) {
    const ProgressiveBlock& b = bs[i];
    std::copy(b.q8.begin(), b.q8.end(), q8.mutable_data() + i * n);
    std::copy(b.codes.begin(), b.codes.end(), codes.mutable_data() + i * n);
    scale8.mutable_data()[i] = b.scale8;
    std::copy(b.s_int.begin(), b.s_int.end(), s_int.mutable_data() + i * d);
    std::copy(b.z_int.begin(), b.z_int.end(), z_int.mutable_data() + i * d);
    std::copy(b.q8_min.begin(), b.q8_min.end(), q8_min.mutable_data() + i * d);
    std::copy(b.q8_max.begin(), b.q8_max.end(), q8_max.mutable_data() + i * d);
    clamped8 += b.clamped8, clamped += b.clamped, saturated += b.saturated;
    bytes += quant::progressive_bytes(b);
  }
  py::dict out;
  out["q8"] = q8;
  out["scale8"] = scale8;
  out["codes"] = codes;
  out["s_int"] = s_int;
  out["z_int"] = z_int;
  out["q8_min"] = q8_min;
  out["q8_max"] = q8_max;
  out["clamped8"] = clamped8;
  out["clamped"] = clamped;
  out["saturated"] = saturated;
  out["bits"] = bs.front().bits;
  out["int_scale"] = name_of(bs.front().rule, kIntScales);
  out["bytes"] = bytes;
  return out;
}

py::dict progressive_compress(const py::object& x, int bits, double q_max8, const std::string& int_scale,
                              const py::object& scale8) {
  const IntScale rule = choose(int_scale, "int_scale", kIntScales);
  {  // the parameters by the engine's own rules (bits 4 or 2, q_max8 in [1, 127]) on a one-value block,
     // before any block: a bad parameter is not a fault of one block of the stack
    const float zero = 0.0f;
    quant::progressive_quantize(&zero, 1, 1, bits, q_max8, rule);
  }
  const char kind = py::isinstance<py::array>(x) ? py::reinterpret_borrow<py::array>(x).dtype().kind() : 'f';
  if (kind != 'i' && kind != 'u') {  // Alg. 1: both steps from FP
    if (!scale8.is_none()) fail_input("scale8", "applies to INT8 input only (step 1 sets it for float x)");
    const Matrices m = float_matrices(x, "x", "(..., tokens, channels)");
    std::vector<ProgressiveBlock> bs(static_cast<size_t>(m.count));
    for_each_matrix(m, "x", [&](int64_t i) {
      bs[i] = quant::progressive_quantize(m.matrix(i), m.rows, m.cols, bits, q_max8, rule);
    });
    return block_dict(m, bs);
  }
  // Step 2 alone on INT8 blocks that already have their scale (§3.3, the decode buffer's flush).
  const auto a = py::reinterpret_borrow<py::array>(x);
  const Matrices m = int_stack(a, "x");
  const py::array_t<int32_t> q = int_array(x, "x", -kInt8Max, kInt8Max);
  const std::vector<float> scales = block_scales(scale8, m);
  const int64_t n = m.rows * m.cols;
  std::vector<ProgressiveBlock> bs(static_cast<size_t>(m.count));
  for_each_matrix(m, "x", [&](int64_t i) {
    const std::vector<int8_t> q8(q.data() + i * n, q.data() + (i + 1) * n);  // exact: checked in [−127, 127]
    bs[i] = quant::progressive_compress(q8.data(), m.rows, m.cols, scales[i], bits, rule);
  });
  return block_dict(m, bs);
}

py::object entry(const py::dict& p, const char* key) {
  if (!p.contains(key))
    fail_input("p", fmt::format("has no '{}' (give the dict attnlab.progressive_compress returned)", key));
  return p[key];
}

py::array_t<int8_t> progressive_decompress(const py::object& obj) {
  if (!py::isinstance<py::dict>(obj)) fail_input("p", "must be the dict attnlab.progressive_compress returned");
  const auto p = py::reinterpret_borrow<py::dict>(obj);
  int bits = 0;
  try {
    bits = entry(p, "bits").cast<int>();
  } catch (const py::cast_error&) {
    fail_input("p['bits']", "must be an integer");
  }
  {  // the engine's rule for the cache width (4 or 2) on a one-value block, not a second copy of it
    const int8_t zero = 0;
    quant::progressive_compress(&zero, 1, 1, 1.0f, bits);
  }
  const py::object codes_obj = entry(p, "codes");
  if (!py::isinstance<py::array>(codes_obj))
    fail_input("p['codes']", "must be a NumPy array of integers (..., tokens, channels)");
  const Matrices m = int_stack(py::reinterpret_borrow<py::array>(codes_obj), "p['codes']");
  const auto codes = int_array(codes_obj, "p['codes']", 0, (int64_t{1} << bits) - 1);
  // s_int and z_int are stored as INT8 (progressive.h); s_int ≥ 1 divides in step 2.
  const auto s_int = int_array(entry(p, "s_int"), "p['s_int']", 1, kInt8Max, m.with({m.cols}));
  const auto z_int = int_array(entry(p, "z_int"), "p['z_int']", -kInt8Max - 1, kInt8Max, m.with({m.cols}));
  py::array_t<int8_t> out(m.with({m.rows, m.cols}));
  int8_t* o = out.mutable_data();
  const int64_t n = m.rows * m.cols, d = m.cols;
  for_each_matrix(m, "p['codes']", [&](int64_t i) {
    ProgressiveBlock b;
    b.rows = m.rows;
    b.cols = m.cols;
    b.bits = bits;
    b.codes.assign(codes.data() + i * n, codes.data() + (i + 1) * n);
    b.s_int.assign(s_int.data() + i * d, s_int.data() + (i + 1) * d);
    b.z_int.assign(z_int.data() + i * d, z_int.data() + (i + 1) * d);
    const std::vector<int8_t> back = quant::progressive_dequantize(b);
    std::copy(back.begin(), back.end(), o + i * n);
  });
  return out;
}

}  // namespace

void bind_progressive(py::module_& m) {
  m.def("progressive_compress", &progressive_compress, py::arg("x"), py::arg("bits") = 4, py::arg("q_max8") = 119.0,
        py::arg("int_scale") = "nearest", py::arg("scale8") = py::none(),
        R"(TurboAttention's progressive quantization of KV blocks (§3.1, Eq. 9–10; App. A Alg. 1;
core/quant/progressive.h), each trailing (tokens, channels) matrix one block.

Step 1 (Eq. 9), float x only: s_K = max|X| / q_max8 (FP32), X^q1 = clamp(⌈X / s_K⌋, −127, 127).
Step 2 (Eq. 10), per channel c of the INT8 block, in integers, with L = 2^bits − 1:
  s_int = max(1, ⌈(max − min) / L⌋)  (int_scale="nearest", Alg. 1; "up" takes the ceiling instead:
                                       then every value dequantizes within s_int/2)
  z_int = ⌈min / s_int⌋,  code = clamp(⌈X^q1 / s_int − z_int⌋, 0, L);  ⌈·⌋ rounds half to even.

x: float32 or float16 (..., tokens, channels), finite: both steps. Or an integer array (int8) with values
    in [−127, 127]: step 2 alone, as the decode buffer's flush runs it (§3.3); scale8 (None → 1, a
    number, or an array of x's leading shape) is then kept as each block's s_K — step 2 never reads it.
bits: 4 or 2.  q_max8: an integer in [1, 127] (Alg. 1: 119).  int_scale: "nearest" or "up".
Returns a dict: "q8" int8 (..., tokens, channels) X^q1; "scale8" float32 (...) s_K; "codes" uint8
(..., tokens, channels) unpacked; "s_int", "z_int", "q8_min", "q8_max" int16 (..., channels); counts
"clamped8" (step 1), "clamped" (step-2 quotients outside [0, L]), "saturated" (values the
decompression saturates to ±127); "bytes" (the packed cache, all blocks); "bits", "int_scale".)");

  m.def("progressive_decompress", &progressive_decompress, py::arg("p"),
        R"(Alg. 2 / Eq. 7–8: the INT8 block back from its INT4/INT2 codes, X̂^q1 = sat₁₂₇((code + z_int)·s_int),
in exact integer arithmetic (core/quant/progressive.h says why z_int counts steps of s_int).

p: the dict attnlab.progressive_compress returned ("codes", "s_int", "z_int", "bits" are read; codes in
    [0, 2^bits − 1], s_int in [1, 127] and z_int in [−128, 127] as the cache stores them).
Returns int8 (..., tokens, channels); multiply by p["scale8"][..., None, None] for the FP values.)");
}

}  // namespace attnlab::python
