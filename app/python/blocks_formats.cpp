// attnlab python: the storage formats' rounding (core/formats: fp8.h, half.h, round.h) on NumPy arrays —
// what a kernel's conversions do to a value, bit for bit, round to nearest even.
#include "app/python/blocks.h"
#include "app/python/blocks_args.h"
#include "core/formats/fp8.h"
#include "core/formats/half.h"
#include "core/formats/round.h"

namespace attnlab::python {

namespace {

using namespace blocks;
using formats::Fp8;
using formats::Overflow;

constexpr std::array<Name<Fp8>, 2> kFp8 = {{{"e4m3", Fp8::e4m3}, {"e5m2", Fp8::e5m2}}};
constexpr std::array<Name<Overflow>, 2> kOverflow = {{{"saturate", Overflow::saturate},
                                                      {"special", Overflow::special}}};

py::array_t<float> round_fp8(const py::object& x, const std::string& format, const std::string& overflow) {
  const Fp8 f = choose(format, "format", kFp8);
  const Overflow o = choose(overflow, "overflow", kOverflow);
  return float_array_applied(x, "x", [&](float* v, int64_t n) { formats::round_fp8_inplace(v, n, f, o); });
}

py::array_t<uint8_t> fp8_bits(const py::object& x, const std::string& format, const std::string& overflow) {
  const Fp8 f = choose(format, "format", kFp8);
  const Overflow o = choose(overflow, "overflow", kOverflow);
  const py::array_t<float> in = float_array(x, "x");
  py::array_t<uint8_t> out(shape_of(in));
  const float* v = in.data();
  uint8_t* b = out.mutable_data();
  const int64_t n = in.size();
  {
    py::gil_scoped_release release;
    for (int64_t i = 0; i < n; ++i) b[i] = formats::fp8_bits(v[i], f, o);
  }
  return out;
}

py::array_t<float> fp8_value(const py::object& codes, const std::string& format) {
  const Fp8 f = choose(format, "format", kFp8);
  const py::array_t<int32_t> c = int_array(codes, "codes", 0, 255);
  py::array_t<float> out(shape_of(c));
  const int32_t* b = c.data();
  float* v = out.mutable_data();
  const int64_t n = c.size();
  {
    py::gil_scoped_release release;
    for (int64_t i = 0; i < n; ++i) v[i] = formats::fp8_value(static_cast<uint8_t>(b[i]), f);
  }
  return out;
}

py::array_t<float> round_fp16(const py::object& x) {
  return float_array_applied(x, "x", [](float* v, int64_t n) { formats::round_fp16_inplace(v, n); });
}

py::array_t<float> round_bf16(const py::object& x) {
  return float_array_applied(x, "x", [](float* v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) v[i] = formats::round_bf16(v[i]);
  });
}

}  // namespace

void bind_formats(py::module_& m) {
  m.def("round_fp8", &round_fp8, py::arg("x"), py::arg("format") = "e4m3", py::arg("overflow") = "saturate",
        R"(x rounded to OCP FP8 (core/formats/fp8.h), round to nearest even, as CUDA's
cvt.rn.satfinite.{e4m3,e5m2}x2.f32 does (checked against an H100 on all 2³² FP32 inputs).

E4M3: 4 exponent bits (bias 7), 3 mantissa bits, max ±448, subnormals k·2⁻⁹, no infinities.
E5M2: 5 exponent bits (bias 15), 2 mantissa bits, max ±57344, subnormals k·2⁻¹⁶.
x: float32 or float16 array, any shape; NaN and ±inf allowed.
format: "e4m3" or "e5m2".
overflow: "saturate" (|x| past the rounding boundary, 464 / 61440, and ±inf → ±max, FlashAttention-3's
    conversion) or "special" (E5M2 → ±inf, E4M3 → NaN).
Returns float32 of x's shape: every value an FP8 value (or NaN for NaN).)");

  m.def("fp8_bits", &fp8_bits, py::arg("x"), py::arg("format") = "e4m3", py::arg("overflow") = "saturate",
        R"(The FP8 codes of x (core/formats/fp8.h): sign, exponent, mantissa bits, rounded as round_fp8
rounds (NaN → 0x7F). x: float32 or float16, any shape. Returns uint8 of x's shape.)");

  m.def("fp8_value", &fp8_value, py::arg("codes"), py::arg("format") = "e4m3",
        R"(The exact values of FP8 codes (core/formats/fp8.h); NaN codes give NaN, E5M2's 0x7C/0xFC ±inf.
codes: an integer array in [0, 255], any shape. Returns float32 of its shape.)");

  m.def("round_fp16", &round_fp16, py::arg("x"),
        R"(x rounded to IEEE binary16 (core/formats/half.h, round.h), round to nearest even as
__float2half_rn: subnormals kept, |x| ≥ 65520 → ±inf, NaN stays NaN.
x: float32 or float16 array, any shape. Returns float32 of x's shape.)");

  m.def("round_bf16", &round_bf16, py::arg("x"),
        R"(x rounded to bfloat16 (core/formats/half.h): the top 16 bits of the FP32 pattern, rounded to
nearest even as __float2bfloat16_rn; NaN stays NaN.
x: float32 or float16 array, any shape. Returns float32 of x's shape.)");
}

}  // namespace attnlab::python
