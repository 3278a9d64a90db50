// attnlab views: one step of the tile stepper — the traced query block Qᵢ of one variant at KV-tile step j
// (App. D's inner loop), as plain data the GUI draws: the tiles, the running max and sum of three rows,
// the scales of the tiles on chip, the bytes so far, and the model's count for one tile beside them.
#pragma once

#include "core/results.h"

#include <optional>
#include <string>
#include <vector>

namespace attnlab::views {

struct StepperRow {
  int64_t row = 0;       // within the block
  double m = 0, l = 0;   // running max and sum after this step
  bool m_changed = false;  // m grew at this step: ℓ and O were rescaled
};

struct StepperScale {
  std::string name;      // "scales.q", "scales.k", "scales.v"
  double lo = 0, hi = 0;  // equal when one scale covers the tile; a range when scales are per token
  bool per_token = false;
};

struct StepperModelRow {
  std::string what;  // "K/V bytes", "Q_i bytes", or a unit ("mma_fp16", "exp_sfu", …)
  double value = 0;
};

struct StepperView {
  int steps = 0, step = 0;        // KV-tile steps of the traced block, and the one shown
  int64_t kv_tile = 0;            // the KV tile index loaded at this step
  int64_t batch = 0, head = 0, row_block = 0, first_row = 0, rows = 0, block_r = 0, block_c = 0;
  std::vector<StepperRow> rows_shown;  // rows 0, rows / 2, rows − 1
  std::vector<StepperScale> scales;    // of Qᵢ and of the KV tile on chip
  double bytes_so_far = 0, bytes_this_step = 0;  // the reference's trace (step 0 includes Qᵢ)
  std::string model_gpu, model_tiles_from, model_bound;
  int model_block_c = 0;
  std::vector<StepperModelRow> model_tile;  // empty when no model result or no per-tile details
};

// Variants of r whose reference recorded the trace, by label.
std::vector<std::string> traced_variants(const Results& r);

// The stepper at `step` (clamped) for the variant labelled `label`; nullopt when it has no trace or the
// traced block sees no key.
std::optional<StepperView> stepper_view(const Results& r, const std::string& label, int step);

}  // namespace attnlab::views
