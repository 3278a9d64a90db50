// attnlab core: head-wise mixed precision (TurboAttention §3.2, Eq. 11–12; the ablation of §5.6).
// Which heads of a layer keep a 4-bit KV cache and which drop to 2 bits.
//
// Eq. 11, priority⁽ʰ⁾ = gap⁽ʰ⁾ × std⁽ʰ⁾, for one head's (tokens, channels) keys or values:
//   gap  = max − min over all tokens and channels of the head;
//   std  = the standard deviation of the channel-wise gaps g_c = max_t x[t, c] − min_t x[t, c]
//          (population std: divided by the number of channels, accumulated in FP64).
// The §5.6 baselines are described in one line each; these are our readings:
//   min_max    "the range between minimum and maximum values within heads": gap alone.
//   variation  "variation in channelwise value ranges": std of the channel-wise gaps alone — the
//              paper's second factor — rather than the coefficient of variation, so that the ablation
//              compares Eq. 11 with each of its two factors.
//   entropy    "the entropy of each head": the Shannon entropy (bits) of the head's values in a
//              histogram of 256 equal-width bins spanning [min, max] of the head (the INT8 levels of an
//              asymmetric 8-bit grid; bin = min(255, ⌊(x − min)/(max − min)·256⌋)); a constant head has
//              entropy 0. Higher entropy = more information = keep 4 bits.
// Higher score = more important = keeps 4 bits.
#pragma once

#include <cstdint>
#include <vector>

namespace attnlab::quant {

enum class PriorityMetric { gap_std /* Eq. 11 */, entropy, min_max, variation };

// The quantities behind the metrics, for probes (a GUI shows the channel ranges of Fig. 4).
struct HeadRange {
  double min = 0, max = 0;         // over the whole head
  double gap = 0;                  // max − min (Eq. 11)
  double gap_std = 0;              // std of the channel gaps (Eq. 11)
  std::vector<float> channel_min;  // (channels) min over tokens
  std::vector<float> channel_max;  // (channels) max over tokens
};

// x is (tokens, channels) of one head. Throws InputError for empty input or NaN/Inf.
HeadRange head_range(const float* x, int64_t tokens, int64_t channels);

// x is (tokens, channels) of one head (keys or values). Returns the score of metric m.
double head_priority(const float* x, int64_t tokens, int64_t channels, PriorityMetric m);

// Eq. 12: the two_bit_heads (n_h) heads of lowest priority get bits_lo, the others bits_hi. Ranks sort
// by (priority, head index) ascending: among equal priorities the lower head index drops to bits_lo
// first. priorities is (heads); returns (heads) bit widths. Throws InputError when two_bit_heads is not
// in [0, heads], a priority is NaN, or a width is not 2, 4 or 8.
std::vector<int> assign_bits(const std::vector<double>& priorities, int two_bit_heads, int bits_lo = 2,
                             int bits_hi = 4);

}  // namespace attnlab::quant
