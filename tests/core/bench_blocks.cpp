// Throughput of the numerical building blocks, one core, M elements/s: `make bench-blocks`
// (attnlab_tests "[.bench]" in a Release build). The issue-3 target is ≥ 200 M elements/s for the
// quantizers and SAS. Hidden from the default run ([.]); it prints figures and asserts nothing about time.
#include "core/fireq/token_int4.h"
#include "core/formats/fp8.h"
#include "core/quant/decode_buffer.h"
#include "core/quant/kivi.h"
#include "core/quant/progressive.h"
#include "core/quant/quantize.h"
#include "core/sas.h"
#include "tests/catch.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// A (tokens, channels) head with channel outliers, like the K of an LLM layer: 4096 × 128 = 2 MiB of
// FP32, larger than L1/L2 per core, so the figures include streaming the input.
constexpr int64_t kTokens = 4096, kChannels = 128, kElements = kTokens * kChannels;

std::vector<float> head_data(uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kElements));
  for (int64_t i = 0; i < kElements; ++i) x[static_cast<size_t>(i)] = normal(gen) * (i % kChannels % 16 == 3 ? 12.0f : 1.0f);
  return x;
}

// Runs pass() (which touches `elements` elements) until at least 0.3 s have passed, after one warm-up
// pass, and prints the rate. g_sink keeps the results alive.
volatile double g_sink = 0;

void measure(const std::string& name, int64_t elements, const std::function<double()>& pass) {
  double sink = pass();
  int64_t passes = 0;
  double seconds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (seconds < 0.3) {
    sink += pass();
    ++passes;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  g_sink = g_sink + sink;
  WARN(fmt::format("{:<44} {:>6.0f} M elements/s", name, double(elements * passes) / seconds / 1e6));
}

TEST_CASE("building-block throughput, one core", "[.bench]") {
  const std::vector<float> x = head_data(1), v = head_data(2);
  std::vector<float> y(x.size());
  const auto n = static_cast<int64_t>(x.size());

  for (auto [f, name] : {std::pair{formats::Fp8::e4m3, "FP8 E4M3 round (saturating)"},
                         std::pair{formats::Fp8::e5m2, "FP8 E5M2 round (saturating)"}})
    measure(name, n, [&, f = f] {
      y = x;
      formats::round_fp8_inplace(y.data(), n, f);
      return double(y[5]);
    });

  using quant::Granularity, quant::Scheme, quant::Spec;
  const std::pair<Spec, const char*> specs[] = {
      {Spec{.granularity = Granularity::tensor}, "quantize tensor INT8 sym"},
      {Spec{.granularity = Granularity::token}, "quantize token INT8 sym"},
      {Spec{.granularity = Granularity::channel}, "quantize channel INT8 sym"},
      {Spec{.granularity = Granularity::block, .q_max = 119}, "quantize block(64) INT8 sym q_max 119"},
      {Spec{.bits = 4, .scheme = Scheme::asymmetric, .granularity = Granularity::group_tokens},
       "quantize group_tokens(32) INT4 asym"},
      {Spec{.bits = 2, .scheme = Scheme::asymmetric, .granularity = Granularity::group_channels},
       "quantize group_channels(32) INT2 asym"},
  };
  for (const auto& [spec, name] : specs)
    measure(name, n, [&, spec = spec] { return quant::quantize(x.data(), kTokens, kChannels, spec).stats.max_abs_error; });

  for (int bits : {4, 2})
    measure(fmt::format("progressive INT8 -> INT{} (64-token blocks)", bits), n, [&, bits] {
      double s = 0;
      for (int64_t b = 0; b < kTokens; b += 64)
        s += quant::progressive_quantize(x.data() + b * kChannels, 64, kChannels, bits).s_int[0];
      return s;
    });
  measure("progressive dequantize INT4 -> INT8", n, [&] {
    static const auto block = quant::progressive_quantize(x.data(), 64, kChannels, 4);
    double s = 0;
    for (int64_t b = 0; b < kTokens; b += 64) s += quant::progressive_dequantize(block)[7];
    return s;
  });
  measure("decode buffer append (n_b 64, INT4 flush)", n, [&] {
    quant::DecodeBuffer buffer(kChannels, 64, quant::universal_scale(x.data(), 64, kChannels), 4);
    for (int64_t t = 0; t < kTokens; ++t) buffer.append(x.data() + t * kChannels);
    return double(buffer.clamped());
  });
  measure("KIVI K+V INT2 g32 R128 (per K or V element)", 2 * n, [&] {
    return double(quant::kivi_quantize(x.data(), v.data(), kTokens, kChannels, 2, 32, 128).keys.scale[0]);
  });
  measure("FireQ token INT4, E4M3 scales", n, [&] {
    return double(fireq::quantize_token_int4(x.data(), kTokens, kChannels, fireq::ScaleFormat::fp8_e4m3).scale[0]);
  });

  for (auto [p, name] : {std::pair{sas::Precision::fp32, "SAS FP32, 64-wide rows"},
                         std::pair{sas::Precision::fp16, "SAS FP16 emulated, 64-wide rows"}}) {
    sas::Config c;
    c.precision = p;
    std::vector<float> scores(x.size());
    for (size_t i = 0; i < x.size(); ++i) scores[i] = -std::abs(x[i]) * 0.7f;  // t ≤ 0, some below n_r
    measure(name, n, [&, c] {
      y = scores;
      for (int64_t i = 0; i < n; i += 64) sas::sas_exp_inplace(y.data() + i, 64, 0.0f, c);
      return double(y[5]);
    });
  }
}

}  // namespace
}  // namespace attnlab
