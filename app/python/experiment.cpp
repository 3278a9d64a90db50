#include "app/python/experiment.h"

#include "core/error.h"
#include "core/json_input.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

namespace attnlab::python {

namespace py = pybind11;
using nlohmann::json;

namespace {

// Given arrays fix the problem's shapes and replace the data section (generator or file).
void adopt_array_shapes(json& j, const QKV& in) {
  if (!j.is_object()) return;  // parse_experiment names the problem
  json& p = j["problem"];
  if (p.is_null()) p = json::object();
  if (!p.is_object()) return;
  const Shape4 q = in.q.shape(), kv = in.k.shape();
  p["batch"] = q.batch;
  p["q_heads"] = q.heads;
  p["kv_heads"] = kv.heads;
  p["q_len"] = q.len;
  p["kv_len"] = kv.len;
  p["head_dim"] = q.dim;
  j.erase("data");
}

}  // namespace

// The config as an Experiment, through the CLI's path: a file is read by the guarded reader and its
// errors name the file (load_experiment); a dict becomes JSON text (json.dumps) and is parsed as a file is.
Experiment experiment_from(const py::object& config, const std::optional<QKV>& arrays) {
  if (py::isinstance<py::str>(config) || py::hasattr(config, "__fspath__")) {
    const std::string path = py::str(py::module_::import("os").attr("fspath")(config));
    if (!arrays) return load_experiment(path);
    json j = read_json_file(path);
    adopt_array_shapes(j, *arrays);
    const std::string folder = std::filesystem::path(path).parent_path().string();
    try {
      return parse_experiment(j, folder.empty() ? "." : folder);
    } catch (const InputError& err) {
      throw InputError(echo_path(path) + ": " + err.what());
    }
  }
  if (!py::isinstance<py::dict>(config))
    fail_input("config", "must be a dict or the path of a config file, got " +
                             echo(py::str(py::type::of(config).attr("__name__")).cast<std::string>(), 40));
  std::string text;
  try {
    text = py::module_::import("json").attr("dumps")(config, py::arg("allow_nan") = false).cast<std::string>();
  } catch (py::error_already_set& err) {
    if (!err.matches(PyExc_TypeError) && !err.matches(PyExc_ValueError)) throw;
    fail_input("config", "not JSON: " + echo(py::str(err.value()).cast<std::string>(), 120));
  }
  json j = parse_json_text(text, "config");
  if (arrays) adopt_array_shapes(j, *arrays);
  return parse_experiment(j, ".");
}

}  // namespace attnlab::python
