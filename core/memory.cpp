// attnlab core: the memory estimate and limit (memory.h).
#include "core/memory.h"

#include "core/error.h"
#include "core/parallel.h"
#include "core/registry.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace attnlab {

namespace {

constexpr double kF32 = 4, kF64 = 8;  // bytes per element
constexpr double kGiB = double(1ull << 30);

}  // namespace

double MemoryEstimate::total() const {
  return kAllocatorSlack * (inputs + truth + std::max({truth_scratch, variant, regenerated}));
}

MemoryEstimate estimate_memory(const Experiment& e, int threads, bool ground_truth) {
  const Problem& p = e.problem;
  const double B = double(p.batch), Hq = double(p.q_heads), Nq = double(p.q_len), Nkv = double(p.kv_len),
               d = double(p.head_dim);
  const double q = B * Hq * Nq * d, kv = B * double(p.kv_heads) * Nkv * d;
  MemoryEstimate m;
  m.inputs = kF32 * (q + 2 * kv);
  const double truth_threads = ground_truth ? std::min(double(threads), B * Hq) : 0.0;
  m.truth = ground_truth ? kF64 * q : 0.0;
  // ground_truth.cpp, per thread: one head's Q, K, V cast to FP64, its score matrix A with the Q·Kᵀ
  // temporary Eigen evaluates before scaling it, and the A·V product it evaluates into a temporary before
  // storing it into the truth's head.
  m.truth_scratch = truth_threads * kF64 * (2 * Nq * d + 2 * Nkv * d + 2 * Nq * Nkv);
  // runner.cpp: the pre-RoPE channel probe regenerates Q, K, V while a variant's output is alive.
  if (e.wants("reference") && e.data.file.empty() && e.data.generator_params.values().count("rope") &&
      e.data.generator_params.flag("rope"))
    m.regenerated = m.inputs + kF32 * q;
  for (const VariantRequest& v : e.variants) {
    if (!e.wants("reference")) break;
    const VariantSpec& spec = *find_variant(v.id);
    if (!spec.working_memory) throw std::logic_error("variant '" + spec.id + "' declares no working_memory");
    const double bytes = spec.working_memory(p, v.params, threads);
    if (bytes > m.variant) m.variant = bytes, m.variant_label = v.shown_label();
  }
  return m;
}

double memory_limit_bytes() {
  const char* env = std::getenv("ATTNLAB_MAX_MEMORY_GB");
  if (env && *env) {
    char* end = nullptr;
    const double gb = std::strtod(env, &end);
    while (end && (*end == ' ' || *end == '\t')) ++end;
    // strtod also reads "nan", "inf" and hex floats: only a finite positive value within the bound passes.
    if (end == env || *end != '\0' || !std::isfinite(gb) || !(gb > 0) || gb > kMaxMemoryGiB)
      fail_input("ATTNLAB_MAX_MEMORY_GB",
                 fmt::format("'{}' is not a positive number of GiB (at most {})", echo(env), kMaxMemoryGiB));
    return gb * kGiB;
  }
  const double physical = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  return 0.6 * physical;
}

void check_memory(const Experiment& e, bool ground_truth) {
  const double limit = memory_limit_bytes();  // first: a bad limit is named even for a small problem
  const int threads = worker_threads();
  const MemoryEstimate m = estimate_memory(e, threads, ground_truth);
  const double need = m.total();
  if (need <= limit) return;
  // The terms of total(): the variants' working memory only where the reference runs them.
  const std::string beside = m.variant_label.empty()
                                 ? fmt::format("truth scratch {:.3g}", m.truth_scratch / kGiB)
                                 : fmt::format("the largest of truth scratch {:.3g} and variant '{}''s reference {:.3g}",
                                               m.truth_scratch / kGiB, echo(m.variant_label, 40), m.variant / kGiB);
  fail_input("problem",
             fmt::format("needs about {:.3g} GiB of host memory for its data (inputs {:.3g}, FP64 truth {:.3g}, {}, on {} "
                         "threads), more than the {:.3g} GiB allowed (ATTNLAB_MAX_MEMORY_GB){}; the model backend alone "
                         "needs no data",
                         need / kGiB, m.inputs / kGiB, m.truth / kGiB, beside, threads, limit / kGiB,
                         e.data.file.empty() ? "" : "; the sizes are those of data.file " + echo_path(e.data.file)));
}

}  // namespace attnlab
