// attnlab python: the module `attnlab` — the engine itself (core, sim, and the kernels when this build
// has them) behind Python, not a re-implementation. Errors: attnlab::InputError (bad input the user can
// fix) becomes ValueError carrying the CLI's one-line message; any other failure RuntimeError.
#include "app/python/blocks.h"
#include "app/python/compare.h"
#include "app/python/model.h"
#include "app/python/run.h"
#include "app/python/saved.h"
#include "core/error.h"

#include <pybind11/pybind11.h>

#include <exception>
#include <new>

namespace py = pybind11;

PYBIND11_MODULE(attnlab, m) {
  m.doc() = "attnlab: quantized attention — run experiments with the engine behind the attnlab CLI";
  m.attr("__version__") = ATTNLAB_VERSION;

  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const attnlab::InputError& e) {
      PyErr_SetString(PyExc_ValueError, attnlab::one_line(e.what()).c_str());
    } catch (const py::builtin_exception&) {
      throw;  // pybind11's own (py::value_error, …) and Python errors in flight keep their types
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // MemoryError
    } catch (const std::exception& e) {  // std::invalid_argument too: an internal failure, not bad input
      PyErr_SetString(PyExc_RuntimeError, attnlab::one_line(e.what()).c_str());
    }
  });

  m.def("run", &attnlab::python::run, py::arg("config"), py::arg("q") = py::none(), py::arg("k") = py::none(),
        py::arg("v") = py::none(), py::arg("progress") = true,
        R"(Runs an experiment with the backends of `attnlab run` (reference, model, kernel when built and a
GPU is present).

config: a dict in the config-file form (docs/configs.md) or the path of a config file.
q, k, v: optional NumPy arrays, float32 or float16, q (B, H, N, d), k and v (B, H_kv, N_kv, d); they
    replace the config's data and fix the problem's shapes.
progress: True (default) for a tqdm progress bar when tqdm is installed; a callable(fraction, stage),
    called between stages; None or False for no progress. The GIL is released while the engine runs.

Returns the dict of results.json, with NumPy arrays added: variants[i]["reference"]["output"], the
output O (B, H, N, d) float32 the metrics were computed from, and probes[name]["array"] for each probe;
the same under variants[i]["kernel"] where a kernel ran (its O read back from the GPU).
Raises ValueError for bad input (the CLI's message), RuntimeError for internal failures.)");
  attnlab::python::bind_saved(m);
  attnlab::python::bind_blocks(m);
  attnlab::python::bind_compare(m);
  attnlab::python::bind_model(m);
}
