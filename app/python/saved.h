// attnlab python: results as Python objects — the one form attnlab.run returns and attnlab.load_results
// gives back from a saved results folder or file (results.json schema /2 or /1).
#pragma once

#include "core/results.h"

#include <nlohmann/json.hpp>

#include <pybind11/pybind11.h>

namespace attnlab::python {

// The dict of results.json as saved (core/results_sidecars.h), each probe with its values as a NumPy
// array under "array" and a variant's logsumexp also under ["lse"] where it records one. A sidecar
// probe has no "values" list: its dict is results.json's reference ("npy", the file `attnlab run --save`
// writes it to, relative to the folder; "dtype" of that file, "shape", "summary"); "array" is float64. `deferred`: arrays not yet read stay
// unread until their key is first read (the dicts are attnlab.LazyDict, a dict subclass), and a missing
// or damaged sidecar raises ValueError naming the file then.
// `saved` is r's results.json: as read from the file (load_results), or to_json(r, plan) (attnlab.run).
pybind11::dict results_to_python(const Results& r, const nlohmann::json& saved, bool deferred);

// attnlab.load_results and the LazyDict class.
void bind_saved(pybind11::module_& m);

}  // namespace attnlab::python
