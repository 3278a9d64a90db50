// attnlab core: head priorities and the Eq. 12 bit assignment (head_priority.h states the metrics).
#include "core/quant/head_priority.h"

#include "core/error.h"
#include "core/quant/quantize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnlab::quant {

namespace {

constexpr int kEntropyBins = 256;

// Shannon entropy (bits) of the head's values over kEntropyBins equal-width bins on [min, max].
double entropy(const float* x, int64_t n, double mn, double mx) {
  if (!(mx > mn)) return 0.0;
  std::vector<int64_t> counts(kEntropyBins, 0);
  const double per_bin = kEntropyBins / (mx - mn);
  for (int64_t i = 0; i < n; ++i)
    ++counts[std::min<int64_t>(kEntropyBins - 1, static_cast<int64_t>((x[i] - mn) * per_bin))];
  double h = 0;
  for (int64_t c : counts)
    if (c > 0) {
      const double p = double(c) / double(n);
      h -= p * std::log2(p);
    }
  return h;
}

void require_bits(int bits, const char* where) {
  if (bits != 2 && bits != 4 && bits != 8) fail_input(where, fmt::format("must be 2, 4 or 8 (got {})", bits));
}

}  // namespace

HeadRange head_range(const float* x, int64_t tokens, int64_t channels) {
  if (tokens < 1 || channels < 1)
    fail_input("head_priority.x",
               fmt::format("must not be empty (got tokens = {}, channels = {})", tokens, channels));
  require_finite(x, tokens, channels, "head_priority.x");
  HeadRange h;
  h.channel_min.assign(x, x + channels);
  h.channel_max.assign(x, x + channels);
  for (int64_t t = 1; t < tokens; ++t)
    for (int64_t c = 0; c < channels; ++c) {
      h.channel_min[c] = std::min(h.channel_min[c], x[t * channels + c]);
      h.channel_max[c] = std::max(h.channel_max[c], x[t * channels + c]);
    }
  h.min = *std::min_element(h.channel_min.begin(), h.channel_min.end());
  h.max = *std::max_element(h.channel_max.begin(), h.channel_max.end());
  h.gap = h.max - h.min;  // Eq. 11: gap⁽ʰ⁾
  double sum = 0, sum_sq = 0;
  for (int64_t c = 0; c < channels; ++c) sum += double(h.channel_max[c]) - double(h.channel_min[c]);
  const double mean = sum / double(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double d = double(h.channel_max[c]) - double(h.channel_min[c]) - mean;
    sum_sq += d * d;
  }
  h.gap_std = std::sqrt(sum_sq / double(channels));  // Eq. 11: std⁽ʰ⁾, population std of the gaps
  return h;
}

double head_priority(const float* x, int64_t tokens, int64_t channels, PriorityMetric m) {
  const HeadRange h = head_range(x, tokens, channels);
  switch (m) {
    case PriorityMetric::gap_std: return h.gap * h.gap_std;  // Eq. 11
    case PriorityMetric::min_max: return h.gap;
    case PriorityMetric::variation: return h.gap_std;
    case PriorityMetric::entropy: return entropy(x, tokens * channels, h.min, h.max);
  }
  return 0.0;
}

std::vector<int> assign_bits(const std::vector<double>& priorities, int two_bit_heads, int bits_lo,
                             int bits_hi) {
  const int heads = static_cast<int>(priorities.size());
  if (two_bit_heads < 0 || two_bit_heads > heads)
    fail_input("two_bit_heads",
               fmt::format("must be in [0, {}] (the number of heads), got {}", heads, two_bit_heads));
  require_bits(bits_lo, "bits_lo");
  require_bits(bits_hi, "bits_hi");
  for (int h = 0; h < heads; ++h)
    if (std::isnan(priorities[h])) fail_input("priorities", fmt::format("head {} has a NaN priority", h));
  std::vector<int> order(heads);
  std::iota(order.begin(), order.end(), 0);
  // Eq. 12: rank ascending by priority; stable, so equal priorities keep the lower head index first.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return priorities[a] < priorities[b]; });
  std::vector<int> bits(heads, bits_hi);
  for (int r = 0; r < two_bit_heads; ++r) bits[order[r]] = bits_lo;
  return bits;
}

}  // namespace attnlab::quant
