// attnlab core: probes — what the references (and later the kernels) record for a learner to see.
//
// A probe is a named array with a shape, a unit and a one-line meaning, e.g.
//   "hbm_bytes"        shape [5]        labels q,k,v,o,lse   unit "bytes"
//   "trace.m"          shape [T_c, B_r]                      unit "logit"
// Names use dots for grouping ("trace.*" is the online-softmax trace of one row block).
#pragma once

#include "core/probe_values.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnlab {

struct ProbeArray {
  std::vector<int64_t> shape;
  ProbeValues values;               // row-major, size = product(shape); maybe read from a sidecar
  std::vector<std::string> labels;   // optional names along axis 0
  std::string unit;
  std::string help;
};

using Probes = std::map<std::string, ProbeArray>;

// Which slice of the computation the detailed probes follow (the tile stepper's choice).
struct ProbeRequest {
  int64_t batch = 0;
  int64_t head = 0;       // query head
  // Index i of the query row block Q_i, or kLastRowBlock: the last one — under a causal mask the one with
  // the longest KV loop, so a learner stepping through it sees every tile (row block 0 sees one or two).
  int64_t row_block = kLastRowBlock;
  static constexpr int64_t kLastRowBlock = -1;
};

// The row block a variant with `row_blocks` of them (its T_r for its own B_r) traces: the requested index,
// clamped to its last block (a request made for a finer B_r), or the last block.
// (Other negative indices never get here: the config refuses them.)
inline int64_t traced_row_block(const ProbeRequest& r, int64_t row_blocks) {
  return r.row_block == ProbeRequest::kLastRowBlock || r.row_block >= row_blocks ? row_blocks - 1 : r.row_block;
}

// A 1-D probe of named entries (bytes per tensor, counts per category).
ProbeArray labelled(std::vector<std::string> labels, std::vector<double> values, std::string unit,
                    std::string help);

nlohmann::json to_json(const ProbeArray& p);
ProbeArray probe_from_json(const nlohmann::json& j);

}  // namespace attnlab
