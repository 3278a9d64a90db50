#include "app/python/arguments.h"

#include "app/cli/value_checks.h"
#include "core/error.h"

#include <charconv>

namespace attnlab::python {

namespace py = pybind11;

namespace {

std::string type_name(const py::object& value) {
  return echo(py::str(py::type::of(value).attr("__name__")).cast<std::string>(), 40);
}

bool is_path(const py::object& value) { return py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"); }

// os.fspath of a str or os.PathLike; a path of bytes is refused rather than decoded by guess.
std::string fspath(const py::object& value, const std::string& where) {
  const py::object path = py::module_::import("os").attr("fspath")(value);
  if (!py::isinstance<py::str>(path)) fail_input(where, "a path must be text (str), got " + type_name(path));
  return path.cast<std::string>();
}

}  // namespace

std::string id_or_path(const py::object& value, const std::string& option, std::string (*check)(const std::string&)) {
  if (!is_path(value)) fail_input(option, "must be an id (str) or a path, got " + type_name(value));
  const std::string text = fspath(value, option);
  if (const std::string why = check(text); !why.empty()) fail_input(option, why);
  return text;
}

int64_t whole_number(const py::object& value, const std::string& option) {
  if (py::isinstance<py::bool_>(value) || !py::hasattr(value, "__index__"))
    fail_input(option, "must be an int, got " + type_name(value));
  const std::string text = py::str(py::module_::import("operator").attr("index")(value)).cast<std::string>();
  if (const std::string why = cli::check_whole_number(text); !why.empty()) fail_input(option, why);
  int64_t n = 0;
  std::from_chars(text.data(), text.data() + text.size(), n);  // checked above: the whole text, in range
  return n;
}

}  // namespace attnlab::python
