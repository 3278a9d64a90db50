// The generic quantizer (core/quant/quantize.h): the s/2 error bound at every granularity × bit width ×
// scheme over awkward shapes (tail groups), the group order, the exact FP32 rules (scale, x/s, ties to
// even), the defined scales of zero and constant groups, fixed-scale clamping, and every InputError.
//
// Tolerance of the s/2 bound: |x − x̂| ≤ s/2 exactly in real arithmetic for an unclamped value; the
// four FP32 roundings of x − z, (x − z)/s, q·s and q·s + z each err by at most u = 2⁻²⁴ times a
// magnitude bounded by |x| + |z| + (top + 1)·s, so the test allows s/2 + 4u·(|x| + |z| + (top + 1)·s).
#include "core/error.h"
#include "core/formats/half.h"
#include "core/quant/quantize.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace attnlab::quant {
namespace ATTNLAB_FILE_LOCAL {

constexpr double kU32 = 0x1p-24;

using test::input_error;

// (rows, cols) normal values whose channels differ in scale and offset, so every granularity sees
// groups of different ranges.
std::vector<float> channel_data(int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      x[r * cols + c] = normal(gen) * float(1 + c % 5) + (c % 3 == 0 ? 2.0f : -0.5f);
  return x;
}

// The scale rule of quantize.h, written again from the header's words.
float expected_scale(const Spec& spec, float mn, float mx) {
  const float top = static_cast<float>(q_top(spec));
  float s = spec.scheme == Scheme::symmetric ? std::max(std::fabs(mn), std::fabs(mx)) / top : (mx - mn) / top;
  if (!(s >= std::numeric_limits<float>::min())) s = 1.0f;
  if (spec.fp16_params) s = formats::round_fp16(s) == 0.0f ? 1.0f : formats::round_fp16(s);
  return s;
}

const Granularity kGranularities[] = {Granularity::tensor,       Granularity::token,
                                      Granularity::channel,      Granularity::block,
                                      Granularity::group_tokens, Granularity::group_channels};

// One quantize → dequantize round trip of (rows, cols) data under spec, checked element by element.
void check_round_trip(const Spec& spec, int64_t rows, int64_t cols) {
  const std::vector<float> x = channel_data(rows, cols, 7 + spec.bits);
  const Quantized q = quantize(x.data(), rows, cols, spec);
  INFO(fmt::format("rows {} cols {} granularity {} bits {} scheme {} group {} fp16 {}", rows, cols,
                   int(spec.granularity), spec.bits, int(spec.scheme), spec.group, spec.fp16_params));
  const Tile t = tile_of(q.spec, rows, cols);
  const int64_t groups = (rows + t.row_span - 1) / t.row_span * ((cols + t.col_span - 1) / t.col_span);
  const bool sym = spec.scheme == Scheme::symmetric;
  REQUIRE(q.groups() == groups);
  REQUIRE(q.zero.size() == (sym ? 0 : size_t(groups)));

  // Group ranges by brute force through group_of (tail groups included), then the scale rule.
  std::vector<float> mn(groups, std::numeric_limits<float>::infinity()), mx(groups, -mn[0]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t g = q.group_of(r, c);
      mn[g] = std::min(mn[g], x[r * cols + c]);
      mx[g] = std::max(mx[g], x[r * cols + c]);
    }
  CHECK(q.group_min == mn);
  CHECK(q.group_max == mx);
  for (int64_t g = 0; g < groups; ++g) {
    CHECK(q.scale[g] == expected_scale(q.spec, mn[g], mx[g]));
    if (!sym) CHECK(q.zero[g] == (spec.fp16_params ? formats::round_fp16(mn[g]) : mn[g]));
  }

  // Every element: q from the documented formula, the s/2 bound, dequantize == x̂ bit for bit.
  std::vector<float> out(x.size());
  dequantize(q, out.data());
  const double top = q_top(q.spec), lo = sym ? -top : 0.0;
  int64_t bad = 0, clamped = 0;
  double worst = 0, sum = 0;
  std::string first;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c, g = q.group_of(r, c);
      const float s = q.scale[g], z = sym ? 0.0f : q.zero[g];
      const float v = std::nearbyint((x[i] - z) / s);
      const bool unclamped = v >= lo && v <= top;
      clamped += !unclamped;
      const double err = std::fabs(double(x[i]) - double(out[i]));
      const double bound = s / 2.0 + 4 * kU32 * (std::fabs(x[i]) + std::fabs(z) + (top + 1) * s);
      const bool ok = q.q[i] == std::clamp(double(v), lo, top) && out[i] == q.dequantized(r, c) &&
                      (!unclamped || err <= bound);
      if (!ok && bad++ == 0)
        first = fmt::format("({}, {}): x {} q {} x̂ {} s {} z {} err {} bound {}", r, c, x[i], q.q[i], out[i],
                            s, z, err, bound);
      worst = std::max(worst, err);
      sum += err;
    }
  INFO(first);
  CHECK(bad == 0);
  // A scale from the group's own range never clamps; an FP16 zero point above min could (by less than
  // half an FP16 ulp of min), and is then counted like any clamp.
  if (!spec.fp16_params) CHECK(clamped == 0);
  CHECK(q.stats.clamped == clamped);
  CHECK(q.stats.max_abs_error == worst);
  CHECK(q.stats.mean_abs_error == Approx(sum / double(x.size())).epsilon(1e-12));
}

TEST_CASE("quantize → dequantize stays within s/2 at every granularity, bit width and scheme", "[quant]") {
  struct Shape {
    int64_t rows, cols;
  };
  // Awkward shapes: single elements, token counts that are not block or group multiples, d = 64/96/128.
  const Shape shapes[] = {{1, 1}, {1, 7}, {7, 5}, {100, 64}, {130, 96}, {64, 128}};
  for (const Shape sh : shapes)
    for (Granularity gran : kGranularities)
      for (int bits : {2, 4, 8})
        for (Scheme scheme : {Scheme::symmetric, Scheme::asymmetric})
          for (int64_t group : {3, 32})  // 3 leaves tails everywhere; block_rows = 2·group
            for (bool fp16 : {false, true})
              check_round_trip(Spec{.bits = bits,
                                    .scheme = scheme,
                                    .granularity = gran,
                                    .block_rows = 2 * group,
                                    .group = group,
                                    .fp16_params = fp16},
                               sh.rows, sh.cols);
}

TEST_CASE("group order is row-major over the tile grid, with shorter tail groups", "[quant]") {
  const int64_t rows = 5, cols = 7;
  const std::vector<float> x = channel_data(rows, cols, 3);
  auto groups_of = [&](Granularity g, int64_t group, int64_t block_rows) {
    return quantize(x.data(), rows, cols, Spec{.granularity = g, .block_rows = block_rows, .group = group});
  };
  const Quantized tensor = groups_of(Granularity::tensor, 32, 64);
  CHECK(tensor.groups() == 1);
  CHECK(tensor.group_of(4, 6) == 0);
  const Quantized token = groups_of(Granularity::token, 32, 64);
  CHECK(token.groups() == rows);
  CHECK(token.group_of(3, 6) == 3);
  const Quantized channel = groups_of(Granularity::channel, 32, 64);
  CHECK(channel.groups() == cols);
  CHECK(channel.group_of(3, 6) == 6);
  const Quantized block = groups_of(Granularity::block, 32, 2);  // rows {0,1}, {2,3}, {4} (tail)
  CHECK(block.groups() == 3);
  CHECK(block.group_of(1, 6) == 0);
  CHECK(block.group_of(4, 0) == 2);
  const Quantized gt = groups_of(Granularity::group_tokens, 2, 64);  // g = (r / 2)·7 + c, tail rows {4}
  CHECK(gt.groups() == 3 * cols);
  CHECK(gt.group_of(3, 2) == 1 * cols + 2);
  CHECK(gt.group_of(4, 6) == 2 * cols + 6);
  CHECK(gt.group_min[2 * cols + 6] == x[4 * cols + 6]);                // a one-token tail group
  const Quantized gc = groups_of(Granularity::group_channels, 3, 64);  // g = r·3 + c / 3, tail cols {6}
  CHECK(gc.groups() == rows * 3);
  CHECK(gc.group_of(4, 5) == 4 * 3 + 1);
  CHECK(gc.group_of(4, 6) == 4 * 3 + 2);
  CHECK(gc.group_max[4 * 3 + 2] == x[4 * cols + 6]);  // a one-channel tail group
}

TEST_CASE("rounding is round-half-to-even of the true quotient x / s", "[quant]") {
  // max|x| = 127 → s = 1 exactly: the ties land on the even integer.
  const std::vector<float> ties = {127, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.5f};
  const Quantized q = quantize(ties.data(), 1, 8, Spec{.granularity = Granularity::tensor});
  REQUIRE(q.scale[0] == 1.0f);
  CHECK(q.q == std::vector<int16_t>{127, 0, 2, 2, 0, -2, -2, 4});

  // max|x| = 889 → s = 7. 45.5 / 7 = 6.5 exactly → 6 (even); 45.5 · fl(1/7) rounds to 6.5000005 → 7.
  // The quantizer divides (quantize.h): q = 6.
  const std::vector<float> div = {889, 45.5f};
  const Quantized d = quantize(div.data(), 1, 2, Spec{.granularity = Granularity::tensor});
  REQUIRE(d.scale[0] == 7.0f);
  CHECK(std::nearbyint(45.5f * (1.0f / 7.0f)) == 7.0f);  // the reciprocal would have rounded up
  CHECK(d.q == std::vector<int16_t>{127, 6});

  // Asymmetric: min 0, max 15 at 4 bits → s = 1, z = 0: (x − 0)/1 ties to even as well.
  const std::vector<float> asym = {0, 15, 0.5f, 1.5f, 2.5f, 14.5f};
  const Quantized a = quantize(
      asym.data(), 1, 6, Spec{.bits = 4, .scheme = Scheme::asymmetric, .granularity = Granularity::tensor});
  REQUIRE(a.scale[0] == 1.0f);
  CHECK(a.q == std::vector<int16_t>{0, 15, 0, 2, 2, 14});
}

TEST_CASE("zero, constant and subnormal-range groups get s = 1 and come back exactly or within range",
          "[quant]") {
  // Rows: all zero; constant 3.25; a huge constant; a range so small that max|x|/127 is subnormal.
  const std::vector<float> x = {0, 0, 0, 3.25f, 3.25f, 3.25f, 1e30f, 1e30f, 1e30f, 1e-40f, -1e-40f, 0};
  for (Scheme scheme : {Scheme::symmetric, Scheme::asymmetric}) {
    const Quantized q =
        quantize(x.data(), 4, 3, Spec{.bits = 4, .scheme = scheme, .granularity = Granularity::token});
    std::vector<float> out(x.size());
    dequantize(q, out.data());
    for (float s : q.scale) CHECK(std::isfinite(s));
    CHECK(q.scale[0] == 1.0f);
    CHECK(q.scale[3] == 1.0f);
    for (int c = 0; c < 3; ++c) {
      CHECK(q.q[c] == 0);
      CHECK(out[c] == 0.0f);
      CHECK(std::fabs(out[9 + c] - x[9 + c]) <= 2e-40f);  // within the group's range
    }
    if (scheme == Scheme::asymmetric) {  // constants: q = 0 and x̂ = 0·1 + min = x exactly
      CHECK(q.scale[1] == 1.0f);
      CHECK(q.scale[2] == 1.0f);
      for (int c = 0; c < 3; ++c) {
        CHECK(out[3 + c] == 3.25f);
        CHECK(out[6 + c] == 1e30f);
      }
    } else {  // symmetric constants are ordinary groups: q = q_max exactly
      CHECK(q.q[3] == 7);
      CHECK(out[3] == 3.25f);
    }
  }
}

TEST_CASE("q_max 119 (TurboAttention's INT8) puts the group max at ±119", "[quant]") {
  const std::vector<float> x = channel_data(64, 128, 11);
  const Quantized q = quantize(x.data(), 64, 128, Spec{.granularity = Granularity::block, .q_max = 119});
  CHECK(q.spec.q_max == 119);
  int max_q = 0;
  for (int16_t v : q.q) max_q = std::max(max_q, std::abs(int(v)));
  CHECK(max_q == 119);
  const float amax = std::max(std::fabs(q.group_min[0]), std::fabs(q.group_max[0]));
  CHECK(q.scale[0] == amax / 119.0f);
}

TEST_CASE("quantize_with_scale clamps to ±q_max and counts every clamp", "[quant]") {
  // s = 1, q_max = 127: 200, −300 and 127.5 (rne → 128) clamp; 126.4 and −127.4 do not.
  const std::vector<float> x = {0, 1, -1, 200, -300, 126.4f, 127.5f, -127.4f};
  const Quantized q = quantize_with_scale(x.data(), 1, 8, 8, 127, 1.0f);
  CHECK(q.q == std::vector<int16_t>{0, 1, -1, 127, -127, 126, 127, -127});
  CHECK(q.stats.clamped == 3);
  CHECK(q.scale == std::vector<float>{1.0f});
  CHECK(q.zero.empty());
  CHECK(q.group_max[0] == 200.0f);
  CHECK(q.stats.max_abs_error == Approx(173.0));
}

TEST_CASE("quantizer parameters and data are validated, naming the field and the rule", "[quant]") {
  const std::vector<float> x = channel_data(4, 8, 1);
  auto starts = [](const std::string& msg, const std::string& where) {
    INFO(msg);
    return msg.rfind(where + ": ", 0) == 0;
  };
  CHECK(starts(input_error([&] { quantize(x.data(), 4, 8, Spec{.bits = 3}); }), "quant.bits"));
  CHECK(starts(input_error([&] { quantize(x.data(), 0, 8, Spec{}); }), "quant.x"));
  CHECK(starts(input_error([&] { quantize(x.data(), 4, 0, Spec{}); }), "quant.x"));
  CHECK(starts(input_error([&] {
                 quantize(x.data(), 4, 8, Spec{.granularity = Granularity::block, .block_rows = 0});
               }),
               "quant.block_rows"));
  CHECK(starts(input_error([&] {
                 quantize(x.data(), 4, 8, Spec{.granularity = Granularity::group_tokens, .group = 0});
               }),
               "quant.group"));
  CHECK(starts(input_error([&] { quantize(x.data(), 4, 8, Spec{.q_max = 128}); }), "quant.q_max"));
  CHECK(starts(input_error([&] { quantize(x.data(), 4, 8, Spec{.q_max = 118.5}); }), "quant.q_max"));
  CHECK(starts(input_error([&] { quantize(x.data(), 4, 8, Spec{.bits = 4, .q_max = 8}); }), "quant.q_max"));
  CHECK(
      starts(input_error([&] { quantize(x.data(), 4, 8, Spec{.scheme = Scheme::asymmetric, .q_max = 119}); }),
             "quant.q_max"));
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> y = x;
    y[13] = bad;
    y[20] = bad;
    const std::string msg = input_error([&] { quantize(y.data(), 4, 8, Spec{}); });
    CHECK(starts(msg, "quant.x"));
    CHECK(msg.find("element 13 (row 1, col 5)") != std::string::npos);  // the first bad index
  }
  const std::vector<float> wide = {-3e38f, 3e38f};
  CHECK(starts(input_error([&] { quantize(wide.data(), 1, 2, Spec{.scheme = Scheme::asymmetric}); }),
               "quant.x"));
  CHECK(starts(input_error([&] { quantize_with_scale(x.data(), 4, 8, 8, 127, 0.0f); }), "quant.scale"));
  CHECK(starts(input_error([&] { quantize_with_scale(x.data(), 4, 8, 8, 127, std::nanf("")); }),
               "quant.scale"));
  CHECK(starts(input_error([&] { quantize_with_scale(x.data(), 4, 8, 8, 127, INFINITY); }), "quant.scale"));
  CHECK(starts(input_error([&] { quantize_with_scale(x.data(), 4, 8, 8, 0, 1.0f); }), "quant.q_max"));
  CHECK(starts(input_error([&] { quantize_with_scale(x.data(), 4, 8, 5, 7, 1.0f); }), "quant.bits"));
}

// Not a test: the throughput of quantize at token and block granularity, single-threaded. Run with
}  // namespace
}  // namespace attnlab::quant
