// attnlab sim: the cost model as the runner's "model" backend (DESIGN.md: the third backend). Fills
// results.json's model section: predicted time, the bounding resource, HBM bytes per tensor, operations
// per unit, and the details behind them (occupancy, per-unit times, the explanation lines).
#pragma once

#include "core/runner.h"
#include "sim/cost_model.h"

#include <memory>

namespace attnlab::sim {

class ModelBackend : public Backend {
 public:
  explicit ModelBackend(ModelOptions o = {}) : options_(o) {}
  std::string name() const override { return "model"; }
  std::string unavailable() const override { return ""; }
  std::string cannot_run(const VariantRequest& v, const Experiment& e) const override;
  bool needs_data() const override { return false; }  // the problem's shapes and the variant's parameters alone
  // Any count: sim/context_parallel_model.h (a GPU spec without links is refused per variant by cannot_run).
  std::string cannot_split(int64_t) const override { return ""; }
  void run(const Experiment& e, const VariantRequest& v, const QKV& in, const TensorF64& truth,
           VariantResult& into) override;

 private:
  ModelOptions options_;
};

// The model's result for one variant (what run() stores), for front ends that call the model directly.
ModelResult model_result(const Experiment& e, const VariantRequest& v, const ModelOptions& o = {});

}  // namespace attnlab::sim
