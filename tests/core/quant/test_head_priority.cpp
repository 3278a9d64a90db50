// Head priorities and the Eq. 12 bit assignment (core/quant/head_priority.h): exact values on a tiny
// head, the expected order of constructed heads under each metric, ties, and every InputError.
#include "core/error.h"
#include "core/quant/head_priority.h"
#include "tests/catch.h"
#include "tests/support/input_error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace attnlab::quant {
namespace ATTNLAB_FILE_LOCAL {

using test::input_error;

using test::starts;

constexpr int64_t kTokens = 64, kChannels = 32;

// A (tokens, channels) head of uniform noise in [−amp, amp], channel 5 multiplied by outlier.
std::vector<float> head(float amp, float outlier, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> u(-amp, amp);
  std::vector<float> x(kTokens * kChannels);
  for (int64_t t = 0; t < kTokens; ++t)
    for (int64_t c = 0; c < kChannels; ++c) x[t * kChannels + c] = u(gen) * (c == 5 ? outlier : 1.0f);
  return x;
}

double priority(const std::vector<float>& x, PriorityMetric m) {
  return head_priority(x.data(), kTokens, kChannels, m);
}

TEST_CASE("Eq. 11 on a head small enough to do by hand", "[quant]") {
  // Channels: {0, 1} gap 1, {1, 5} gap 4, {−2, 2} gap 4. gap = 5 − (−2) = 7; mean channel gap 3,
  // population std √((4 + 1 + 1)/3) = √2.
  const std::vector<float> x = {0, 1, -2, 1, 5, 2};
  const HeadRange h = head_range(x.data(), 2, 3);
  CHECK(h.min == -2);
  CHECK(h.max == 5);
  CHECK(h.gap == 7);
  CHECK(h.gap_std == Approx(std::sqrt(2.0)).epsilon(1e-15));
  CHECK(h.channel_min == std::vector<float>{0, 1, -2});
  CHECK(h.channel_max == std::vector<float>{1, 5, 2});
  CHECK(head_priority(x.data(), 2, 3, PriorityMetric::gap_std) == Approx(7 * std::sqrt(2.0)).epsilon(1e-15));
  CHECK(head_priority(x.data(), 2, 3, PriorityMetric::min_max) == 7);
  CHECK(head_priority(x.data(), 2, 3, PriorityMetric::variation) == Approx(std::sqrt(2.0)).epsilon(1e-15));
}

TEST_CASE("constructed heads rank as expected: outlier channel > medium > flat", "[quant]") {
  const std::vector<float> flat = head(0.1f, 1.0f, 1), medium = head(1.0f, 1.0f, 2),
                           outlier = head(1.0f, 20.0f, 3);
  for (PriorityMetric m : {PriorityMetric::gap_std, PriorityMetric::min_max, PriorityMetric::variation}) {
    INFO(fmt::format("metric {}", int(m)));
    CHECK(priority(outlier, m) > priority(medium, m));
    CHECK(priority(medium, m) > priority(flat, m));
  }
  // Entropy measures spread, not range: a flat head uses its whole histogram like a medium one, and
  // the outlier head crowds 31 of its 32 channels into the middle bins — the lowest entropy of the three,
  // which is why §5.6 finds entropy a poor guide to which heads need 4 bits.
  CHECK(priority(outlier, PriorityMetric::entropy) < priority(medium, PriorityMetric::entropy));
  CHECK(priority(flat, PriorityMetric::entropy) ==
        Approx(priority(medium, PriorityMetric::entropy)).epsilon(0.05));
}

TEST_CASE("entropy uses 256 equal bins over [min, max]", "[quant]") {
  std::vector<float> levels(256);
  for (int i = 0; i < 256; ++i) levels[i] = float(i);  // one value per bin (255 lands in the last bin)
  CHECK(head_priority(levels.data(), 16, 16, PriorityMetric::entropy) == Approx(8.0).epsilon(1e-12));
  const std::vector<float> two = {0, 1, 0, 1, 1, 0, 1, 0};
  CHECK(head_priority(two.data(), 2, 4, PriorityMetric::entropy) == Approx(1.0).epsilon(1e-12));
  const std::vector<float> constant(12, 3.5f);
  CHECK(head_priority(constant.data(), 3, 4, PriorityMetric::entropy) == 0.0);
  CHECK(head_priority(constant.data(), 3, 4, PriorityMetric::gap_std) == 0.0);
}

TEST_CASE("assign_bits gives exactly n_h low-bit heads, lowest priority first, ties to the lower index",
          "[quant]") {
  const std::vector<double> p = {3, 1, 2, 1, 5};
  CHECK(assign_bits(p, 0) == std::vector<int>{4, 4, 4, 4, 4});
  CHECK(assign_bits(p, 1) == std::vector<int>{4, 2, 4, 4, 4});  // heads 1 and 3 tie: head 1 first
  CHECK(assign_bits(p, 2) == std::vector<int>{4, 2, 4, 2, 4});
  CHECK(assign_bits(p, 3) == std::vector<int>{4, 2, 2, 2, 4});
  CHECK(assign_bits(p, 5) == std::vector<int>{2, 2, 2, 2, 2});
  CHECK(assign_bits(p, 2, 4, 8) == std::vector<int>{8, 4, 8, 4, 8});
  std::mt19937_64 gen(9);
  std::uniform_int_distribution<int> level(0, 5);  // few distinct values: many ties
  for (int heads : {1, 8, 32})
    for (int n_h = 0; n_h <= heads; ++n_h) {
      std::vector<double> pr(heads);
      for (double& v : pr) v = level(gen);
      const std::vector<int> bits = assign_bits(pr, n_h);
      CHECK(std::count(bits.begin(), bits.end(), 2) == n_h);
      // Every 2-bit head ranks at or below every 4-bit head; at equal priority the 2-bit heads come first.
      double max_lo = -1, min_hi = 1e9;
      bool tie_order = true;
      for (int h = 0; h < heads; ++h) {
        if (bits[h] == 2)
          max_lo = std::max(max_lo, pr[h]);
        else
          min_hi = std::min(min_hi, pr[h]);
        for (int later = h + 1; later < heads; ++later)
          if (pr[later] == pr[h] && bits[h] == 4 && bits[later] == 2) tie_order = false;
      }
      CHECK(tie_order);
      CHECK(max_lo <= min_hi);
    }
}

TEST_CASE("head priority and assign_bits validate their inputs", "[quant]") {
  const std::vector<double> p = {1, 2, 3};
  CHECK(starts(input_error([&] { assign_bits(p, 4); }), "two_bit_heads"));
  CHECK(starts(input_error([&] { assign_bits(p, -1); }), "two_bit_heads"));
  CHECK(starts(input_error([&] { assign_bits(p, 1, 3, 4); }), "bits_lo"));
  CHECK(starts(input_error([&] { assign_bits(p, 1, 2, 16); }), "bits_hi"));
  CHECK(starts(input_error([&] { assign_bits({1, std::nan(""), 2}, 1); }), "priorities"));
  const std::vector<float> x = {1, 2, 3, 4};
  CHECK(starts(input_error([&] { head_priority(x.data(), 0, 4, PriorityMetric::gap_std); }),
               "head_priority.x"));
  std::vector<float> y = x;
  y[2] = std::numeric_limits<float>::infinity();
  const std::string msg = input_error([&] { head_priority(y.data(), 2, 2, PriorityMetric::entropy); });
  CHECK(starts(msg, "head_priority.x"));
  CHECK(msg.find("element 2 (row 1, col 0)") != std::string::npos);
}

}  // namespace
}  // namespace attnlab::quant
