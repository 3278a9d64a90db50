// attnlab core: each variant's working memory (VariantSpec::working_memory) — the bytes its reference
// holds at its peak beyond the runner's shared inputs and FP64 truth, read from its reference file:
// its output and logsumexp, its own copies of Q/K/V (FP16-rounded, INT8 codes held in floats, caches),
// per-thread scratch (one item per worker thread at a time), and the probes it keeps.
//
// An upper bound, not a guess: every term is an allocation the reference makes, at its largest size,
// added where the allocations can be alive at once and maxed where they cannot. tests/core/
// test_memory_estimate.cpp holds the whole estimate to within [1, 1.5]× the measured peak resident
// memory of real runs, for every variant at two sizes.
#pragma once

#include "core/params.h"
#include "core/problem.h"

namespace attnlab::variants {

double naive_working_memory(const Problem& p, const ParamValues& params, int threads);
double flash2_working_memory(const Problem& p, const ParamValues& params, int threads);
double flash3_fp8_working_memory(const Problem& p, const ParamValues& params, int threads);
double int_flash_working_memory(const Problem& p, const ParamValues& params, int threads);
double turbo_working_memory(const Problem& p, const ParamValues& params, int threads);
double kivi_working_memory(const Problem& p, const ParamValues& params, int threads);
double fireq_working_memory(const Problem& p, const ParamValues& params, int threads);

}  // namespace attnlab::variants
