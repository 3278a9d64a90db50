// attnlab core: what a variant is — one row of the registry.
//
// A variant is data: an id used everywhere (config, GUI, report, kernels, schedules), the paper it
// comes from, the phases it supports, its parameters as ParamSpec rows, an optional consistency check
// across parameters and problem, its reference implementation, and its storage format (core/storage.h). Adding a variant means adding one
// reference file and one registry line (core/registry.cpp); no front end changes.
#pragma once

#include "core/params.h"
#include "core/probes.h"
#include "core/problem.h"
#include "core/storage.h"
#include "core/tensor.h"

#include <functional>
#include <string>
#include <vector>

namespace attnlab {

struct ReferenceOutput {
  Tensor o;                    // (B, Hq, Nq, d)
  Probes probes;
  int64_t kv_cache_bytes = 0;  // bytes the variant keeps per KV cache (all layers' worth: this one)
};

using ReferenceFn =
    std::function<ReferenceOutput(const Problem&, const QKV&, const ParamValues&, const ProbeRequest&)>;
// Checks parameters against each other and against the problem; throws InputError naming `where`.
using ValidateFn = std::function<void(const Problem&, const ParamValues&, const std::string& where)>;
// Bytes a reference run of this variant needs beyond the shared inputs and FP64 truth — its output, its
// copies and caches of Q/K/V, per-thread scratch on `threads` worker threads, its probes — an upper
// bound the runner checks against the memory limit before anything is allocated (core/memory.h).
using WorkingMemoryFn = std::function<double(const Problem&, const ParamValues&, int threads)>;

struct VariantSpec {
  std::string id;
  std::string title;    // one line for tables and legends
  std::string source;   // the paper section it implements
  std::vector<Phase> phases;
  std::vector<ParamSpec> params;
  ValidateFn validate;  // may be empty
  ReferenceFn reference;
  StorageFn storage;    // the storage format for a problem and parameter values (core/storage.h)
  WorkingMemoryFn working_memory;  // required (core/variants/working_memory.h)

  bool supports(Phase p) const;
};

}  // namespace attnlab
