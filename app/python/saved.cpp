#include "app/python/saved.h"

#include "app/python/arrays.h"
#include "app/python/json_to_python.h"
#include "app/report/results_file.h"
#include "core/json_input.h"
#include "core/results_sidecars.h"

#include <pybind11/eval.h>

#include <memory>
#include <string>

namespace attnlab::python {

namespace py = pybind11;

namespace {

// Python side of the deferred arrays: a dict whose values may be Deferred, each read on first access and
// then kept (the same array object every time: probes["lse"]["array"] is backend["lse"]).
constexpr const char* kLazyDict = R"(
class Deferred:
    """An array not read yet; load() reads it once."""
    __slots__ = ("_load", "_value")
    def __init__(self, load):
        self._load, self._value = load, None
    def load(self):
        if self._value is None:
            self._value = self._load()
            self._load = None
        return self._value
    def __repr__(self):
        return "<array not read yet>"

class LazyDict(dict):
    """A dict of results whose large arrays are read from their .npy sidecar when first accessed."""
    def __getitem__(self, key):
        value = dict.__getitem__(self, key)
        if isinstance(value, Deferred):
            value = value.load()
            dict.__setitem__(self, key, value)
        return value
    def get(self, key, default=None):
        return self[key] if key in self else default
    def values(self):
        return [self[k] for k in self]
    def items(self):
        return [(k, self[k]) for k in self]
)";

py::object lazy_dict_class() {
  return py::module_::import("attnlab").attr("LazyDict");
}

py::object deferred_array(const ProbeArray& p) {
  auto probe = std::make_shared<ProbeArray>(p);  // shares the unread values; reads them on load()
  return py::module_::import("attnlab").attr("Deferred")(py::cpp_function([probe] { return to_numpy(*probe); }));
}

// Replaces backend["probes"] by dicts with "array" (and backend["lse"]) for `probes`.
void add_arrays(const py::dict& backend, const Probes& probes, bool deferred) {
  const py::object lazy = lazy_dict_class();
  const auto saved = backend["probes"].cast<py::dict>();
  py::object out = lazy();
  for (const auto& [name, probe] : probes) {
    py::object one = lazy(saved[py::str(name)]);
    py::object array = deferred && !probe.values.loaded() ? deferred_array(probe) : py::object(to_numpy(probe));
    one.attr("__setitem__")("array", array);
    out.attr("__setitem__")(name, one);
    if (name == "lse") backend["lse"] = array;  // (B, H, N), where the variant keeps it
  }
  backend["probes"] = out;
}

}  // namespace

py::dict results_to_python(const Results& r, const nlohmann::json& saved, bool deferred) {
  const auto out = lazy_dict_class()(to_python(saved)).cast<py::dict>();
  const auto variants = out["variants"].cast<py::list>();
  for (size_t i = 0; i < r.variants.size(); ++i) {
    const VariantResult& vr = r.variants[i];
    const auto jv = lazy_dict_class()(variants[i]).cast<py::dict>();
    for (const auto& [backend, probes] :
         {std::pair{"reference", vr.reference ? &vr.reference->probes : nullptr},
          std::pair{"kernel", vr.kernel ? &vr.kernel->probes : nullptr}}) {
      if (!probes) continue;
      const auto b = lazy_dict_class()(jv[backend]).cast<py::dict>();
      add_arrays(b, *probes, deferred);
      jv[backend] = b;
    }
    variants[i] = jv;
  }
  // The inputs' attention statistics (attn.*), as the variants' probes: r["data"]["probes"][name]["array"].
  if (!r.data_probes.empty() && out.contains("data")) {
    const auto data = lazy_dict_class()(out["data"]).cast<py::dict>();
    add_arrays(data, r.data_probes, deferred);
    out["data"] = data;
  }
  return out;
}

void bind_saved(py::module_& m) {
  py::exec(kLazyDict, m.attr("__dict__"));
  m.def(
      "load_results",
      [](const std::string& path) {
        // Read by the same code as attnlab report --results; sidecars are read on access.
        const Results r = report::read_results(path, "load_results");
        const nlohmann::json j = read_json_file(report::results_file_of(path).string());
        if (j.at("schema") == kResultsSchema) return results_to_python(r, j, true);  // its sidecar names kept
        SidecarPlan plan("arrays");  // an older schema: given back in today's form, every array in memory
        return results_to_python(r, to_json(r, plan), true);
      },
      py::arg("path"),
      R"(Reads saved results — a results folder (attnlab run --save, a report folder) or a results.json
(attnlab run --json) — computed here or elsewhere, without running anything.

Returns the dict attnlab.run returns, less the outputs O (results.json holds none): each probe's values
as a NumPy array under probes[name]["array"] (and a variant's logsumexp under ["lse"]). Arrays kept in
.npy sidecars are read the first time their key is read. Raises ValueError naming the file for a
missing file, another schema, or (on access) a missing or damaged sidecar.)");
}

}  // namespace attnlab::python
