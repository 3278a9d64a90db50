#include "app/python/run.h"

#include "app/cli/backends.h"
#include "app/python/arrays.h"
#include "app/python/experiment.h"
#include "app/python/saved.h"
#include "core/config.h"
#include "core/error.h"
#include "core/json_input.h"
#include "core/results.h"
#include "core/results_sidecars.h"
#include "core/runner.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::python {

namespace py = pybind11;
using nlohmann::json;

namespace {

// attnlab.run's progress argument: a callable(fraction, stage); True for a tqdm bar (tqdm.auto: a widget in
// a notebook, text on a terminal) when tqdm is installed, nothing otherwise; None or False for none.
class ProgressBar {
 public:
  explicit ProgressBar(const py::object& progress) {
    if (progress.is_none() || progress.is(py::bool_(false))) return;
    if (progress.is(py::bool_(true))) {
      try {
        bar_ = py::module_::import("tqdm.auto").attr("tqdm")(py::arg("total") = 100, py::arg("unit") = "%",
                                                             py::arg("desc") = "attnlab.run", py::arg("leave") = false);
      } catch (py::error_already_set& err) {
        if (!err.matches(PyExc_ImportError)) throw;  // no tqdm: no bar
      }
      return;
    }
    if (!PyCallable_Check(progress.ptr())) fail_input("progress", "must be a callable(fraction, stage), True, False or None");
    callback_ = progress;
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  ~ProgressBar() {
    if (bar_.is_none()) return;
    try {
      bar_.attr("close")();
    } catch (py::error_already_set& err) {
      err.discard_as_unraisable("attnlab.run: closing the progress bar");
    }
  }
  // With the GIL held.
  void update(double fraction, const std::string& stage) const {
    if (!callback_.is_none()) callback_(fraction, stage);
    if (bar_.is_none()) return;
    bar_.attr("set_description_str")(stage, py::arg("refresh") = false);
    bar_.attr("update")(std::max(0L, std::lround(100 * fraction) - bar_.attr("n").cast<long>()));
  }

 private:
  py::object callback_ = py::none(), bar_ = py::none();
};

}  // namespace

py::dict run(const py::object& config, const py::object& q, const py::object& k, const py::object& v,
             const py::object& progress) {
  const std::optional<QKV> arrays = qkv_from_numpy(q, k, v);
  const Experiment e = experiment_from(config, arrays);
  const ProgressBar bar(progress);  // after the input checks: a refused run draws no bar

  std::vector<std::map<std::string, Tensor>> outputs(e.variants.size());  // per variant, by backend
  std::optional<py::error_already_set> python_error;  // raised by the callback or a pending signal
  RunControl control;
  control.inputs = arrays ? &*arrays : nullptr;
  control.on_output = [&](size_t i, const std::string& backend, const Tensor& o) { outputs.at(i).insert_or_assign(backend, o); };
  control.progress = [&](double fraction, const std::string& stage) {
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Ctrl-C stops the run
      bar.update(fraction, stage);
    } catch (py::error_already_set& err) {
      python_error.emplace(std::move(err));
      throw Cancelled();
    }
  };

  const Runner runner = cli::make_runner();
  Results results;
  try {
    py::gil_scoped_release release;
    results = runner.run(e, control);
  } catch (const Cancelled&) {
    if (python_error) throw std::move(*python_error);
    throw;
  }

  SidecarPlan plan("arrays");  // the form `attnlab run --save` writes and attnlab.load_results gives back
  const py::dict out = results_to_python(results, to_json(results, plan), false);
  if (arrays) out["config"]["data"] = py::dict(py::arg("arrays") = "q, k, v given to attnlab.run");
  const auto variants = out["variants"].cast<py::list>();
  for (size_t i = 0; i < results.variants.size(); ++i) {
    const VariantResult& vr = results.variants[i];
    const auto jv = variants[i].cast<py::dict>();
    if (vr.reference) {
      const auto ref = jv["reference"].cast<py::dict>();
      if (outputs[i].count("reference")) ref["output"] = to_numpy(outputs[i].at("reference"));
    }
    if (vr.kernel) {
      const auto kernel = jv["kernel"].cast<py::dict>();
      if (outputs[i].count("kernel")) kernel["output"] = to_numpy(outputs[i].at("kernel"));
    }
  }
  return out;
}

}  // namespace attnlab::python
