// attnlab core: what the inputs' magnitudes let the variants compute, checked before they run, and
// named when a variant fails on them.
//
// The rule refused up front (check_input_range, exit code 2): every variant computes its scores and its
// P·V accumulator in FP32 (FP64 only in the truth), so an input whose worst case leaves the FP32 range
// is refused before anything runs:
//   scores       max‖qᵢ‖₂ · max‖kⱼ‖₂ · max(softmax_scale, 1)  ≤ FLT_MAX / 2
//   accumulator  kv_len · max|v|                              ≤ FLT_MAX / 2
// By Cauchy–Schwarz |qᵢ·kⱼ| ≤ ‖qᵢ‖‖kⱼ‖, and every partial sum of the dot product too, so within the rule no
// score, and no product before the scale is applied (the max(·, 1)), can overflow; the unnormalized
// accumulator Σⱼ p̃ⱼvⱼ (p̃ ≤ 1) stays below kv_len · max|v|. The factor 2 leaves room for the rounding
// of FP32 sums. The rule is a bound: an input outside it may still happen to fit, but no input inside
// it overflows in FP32.
// What the rule does not cover is each variant's own formats (FP16 storage overflows above 65504): a
// variant that fails on such an input is named by the runner with describe_inputs() beside its error.
#pragma once

#include "core/config.h"
#include "core/tensor.h"

#include <string>

namespace attnlab {

struct InputMagnitudes {
  double q = 0, k = 0, v = 0;    // max |x| over each tensor
  double q_norm = 0, k_norm = 0;  // max ‖row‖₂ over the tokens of every head
};

InputMagnitudes measure_inputs(const QKV& in);

// Where the data comes from, for messages: "data.file x.safetensors" or "data (normal: data.mean = 0,
// data.std = 1e+06, …)", values echoed.
std::string data_source(const Experiment& e);

// Throws InputError naming problem.softmax_scale (when the default 1/√d would have stayed within the rule)
// or the data otherwise.
void check_input_range(const Experiment& e, const InputMagnitudes& m);

// "max|q| = …, max|k| = …, max|v| = … (<source>; FP16 holds ±65504)", for a variant's failure.
std::string describe_inputs(const Experiment& e, const InputMagnitudes& m);

// True when some input exceeds the FP16 range (the narrowest format a variant stores Q, K, V in without
// a scale): a variant's overflow on such data is the data's doing.
bool beyond_fp16(const InputMagnitudes& m);

}  // namespace attnlab
