// attnlab core: probes — what the references (and later the kernels) record for a learner to see.
//
// A probe is a named array with a shape, a unit and a one-line meaning, e.g.
//   "hbm_bytes"        shape [5]        labels q,k,v,o,lse   unit "bytes"
//   "trace.m"          shape [T_c, B_r]                      unit "logit"
// Names use dots for grouping ("trace.*" is the online-softmax trace of one row block).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnlab {

struct ProbeArray {
  std::vector<int64_t> shape;
  std::vector<double> values;        // row-major, size = product(shape)
  std::vector<std::string> labels;   // optional names along axis 0
  std::string unit;
  std::string help;
};

using Probes = std::map<std::string, ProbeArray>;

// Which slice of the computation the detailed probes follow (the tile stepper's choice).
struct ProbeRequest {
  int64_t batch = 0;
  int64_t head = 0;       // query head
  int64_t row_block = 0;  // index i of the query row block Q_i
};

// A 1-D probe of named entries (bytes per tensor, counts per category).
ProbeArray labelled(std::vector<std::string> labels, std::vector<double> values, std::string unit,
                    std::string help);

nlohmann::json to_json(const ProbeArray& p);
ProbeArray probe_from_json(const nlohmann::json& j);

}  // namespace attnlab
