// attnlab python: results as Python objects — the one form attnlab.run returns and attnlab.load_results
// gives back from a saved results folder or file (results.json schema /2 or /1).
#pragma once

#include "core/results.h"

#include <pybind11/pybind11.h>

namespace attnlab::python {

// The dict of results.json as saved (core/results_sidecars.h), each probe with its values as a NumPy
// array under "array" and a variant's logsumexp also under ["lse"] where it records one. A sidecar
// probe has no "values" list (its dict says "shape" and "summary"). `deferred`: arrays not yet read stay
// unread until their key is first read (the dicts are attnlab.LazyDict, a dict subclass), and a missing
// or damaged sidecar raises ValueError naming the file then.
pybind11::dict results_to_python(const Results& r, bool deferred);

// attnlab.load_results and the LazyDict class.
void bind_saved(pybind11::module_& m);

}  // namespace attnlab::python
