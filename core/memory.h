// attnlab core: the memory a reference run needs, estimated from the problem's shapes alone (a data
// file's headers give them), checked against a limit before anything large is read or allocated.
//
// The runner holds, in order: Q, K, V in FP32 (generated, or loaded from the file); the FP64 truth O and,
// while it is computed, per-thread scratch (each thread's head in FP64 and its score matrix); then the
// variants one after another, each with its working memory (VariantSpec::working_memory). Variants run
// sequentially (core/runner.cpp), so the peak is the shared part plus the largest of: the truth's
// scratch, the largest variant, and (llm_like with RoPE) the draws regenerated without RoPE.
#pragma once

#include "core/config.h"

#include <string>

namespace attnlab {

// What the itemized allocations leave out: glibc keeps part of the memory freed in its per-thread arenas
// (the truth's scratch, freed in the worker threads, is not all reused by the variants' allocations that
// follow) and rounds every allocation up. Measured at up to 2% of the itemized total on an idle machine
// (tests/core/test_memory_estimate.cpp), and the itemized total came within 1% of the peak (ratio 0.99 with
// 5% added) on a machine loaded with other builds, where more freed memory stays in the arenas; 10% is added.
inline constexpr double kAllocatorSlack = 1.10;

struct MemoryEstimate {
  double inputs = 0;         // Q, K, V in FP32
  double truth = 0;          // the FP64 truth O, alive for the whole run
  double truth_scratch = 0;  // freed before the first variant runs
  double regenerated = 0;    // llm_like with RoPE: Q, K, V drawn again without it, beside one output
  double variant = 0;        // the largest working memory among the listed variants
  std::string variant_label;
  double total() const;  // kAllocatorSlack × (inputs + truth + the largest of the other three)
};

// For `threads` worker threads (worker_threads() in the runner). Without `ground_truth` (timing-only runs,
// RunControl::ground_truth) the truth and its scratch are not counted; without the reference backend in
// e.backends, no variant's working memory is (the kernel and model backends hold their data elsewhere).
MemoryEstimate estimate_memory(const Experiment& e, int threads, bool ground_truth = true);

// ATTNLAB_MAX_MEMORY_GB (GiB, a positive number, at most kMaxMemoryGiB; an InputError naming it
// otherwise), else 60% of physical memory.
inline constexpr double kMaxMemoryGiB = 1 << 20;
double memory_limit_bytes();

// Throws InputError("problem: needs about … GiB …") when the estimate exceeds the limit. The runner calls it only
// when a backend that runs needs the data (Backend::needs_data): a model-only run holds none.
void check_memory(const Experiment& e, bool ground_truth = true);

}  // namespace attnlab
