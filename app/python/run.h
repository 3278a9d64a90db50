// attnlab python: attnlab.run — one experiment through the same Runner and backends as `attnlab run`.
#pragma once

#include <pybind11/pybind11.h>

namespace attnlab::python {

// config: a dict (the JSON of a config file) or a path to a config file. q, k, v: NumPy arrays replacing
// the config's data (arrays.h says which), or None. progress: a callable(fraction, stage), True for a tqdm
// bar when tqdm is installed, None or False for none.
// Returns the dict of results.json as saved (saved.h: large probes without their value lists), plus NumPy
// arrays: each variant's reference output under variants[i]["reference"]["output"] (B, H, N, d) float32, its logsumexp under ["lse"] (B, H, N)
// float64 for the variants that record it (the "lse" probe), and each probe's values shaped under
// probes[name]["array"] (float64); the kernel backend's likewise under variants[i]["kernel"] (its O read
// back from the GPU, and the logsumexp).
pybind11::dict run(const pybind11::object& config, const pybind11::object& q, const pybind11::object& k,
                   const pybind11::object& v, const pybind11::object& progress);

}  // namespace attnlab::python
