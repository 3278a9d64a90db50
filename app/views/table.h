// attnlab views: table-shaped views of Results, shared by the CLI, the report and (later) the GUI.
// A view is data — titles, units, cells — and never computes anything a backend has not recorded.
#pragma once

#include "core/results.h"

#include <string>
#include <vector>

namespace attnlab::views {

struct Column {
  std::string key;    // machine name, used as CSV header; names its unit (time_ms, kv_cache_bytes)
  std::string title;  // human title
  std::string unit;   // "" when dimensionless
};

struct Cell {
  std::string text;  // formatted for people
  double value = 0;  // the number behind it (NaN for text cells)
};

// The text of a number that is not there: a metric with no ground truth (a timing-only run), a model time
// where no model ran, a ratio to a missing time, anything that is not finite. A view never prints "nan" or
// "inf" as if it were a value; the CSV leaves such a field empty (app/report/csv.h).
inline constexpr const char* kNoNumber = "—";

// A number as a cell, formatted with `format` (fmt syntax, e.g. "{:.3e}"); a value that is not finite
// gives {kNoNumber, NaN}.
Cell number_cell(double value, const char* format);

// Problem::flops() (4·B·H·pairs·d, useful FLOPs) of a results' problem section, for rates from times.
double problem_flops(const nlohmann::json& problem);

struct Table {
  std::string title;
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;
  // One line drawn under the table (CLI, report, GUI; not in the CSV): what its empty cells mean and on which
  // machine each time column was taken. "" when there is nothing to say.
  std::string legend = {};
};

// One row per (variant, backend that ran): errors vs FP64, time, throughput, KV-cache size; rates and
// sizes in the unit that fits each (461.2 TFLOP/s, 3.0 MiB). Times taken on different machines stand in
// different columns, each titled with its machine (this CPU for the reference, the GPU for the kernel, the GPU
// the model predicts for), one column per backend that ran. A cell a backend cannot fill by its nature (a
// prediction has no output to measure errors of; the cache's size is the reference's count) is left empty and
// the legend says why once. Times measured elsewhere (Results::external: report.baselines) follow as rows of their
// own — the implementation, backend "external" — in a column of their own, titled with the GPU they ran on.
Table results_table(const Results& r);
// The CSV keys of the time columns, one per backend (results_table's columns; a row fills its backend's).
inline constexpr const char* kTimeKeys[] = {"time_cpu_ms", "time_gpu_ms", "time_model_ms", "time_external_ms"};
// results_table plus a column "time / baseline": each row's time over the time of the baseline variant's row
// on the same backend — a kernel's time over the baseline's kernel time, a prediction over its prediction; a
// ratio across machines is never formed (empty where the baseline has no row on that backend). Throws
// InputError when no row of the variant `baseline` exists.
Table with_time_ratio(Table t, const std::string& baseline);
// One row per (variant, parameter): every parameter with defaults filled in.
Table params_table(const Results& r);
// What ran, for the first lines of the report: one row per backend the run asked for — the variants it ran
// for, and each variant (or the whole backend) it did not run for with the reason. Backends not requested are
// left out.
Table what_ran_table(const Results& r);

// The GPU as the status line and the report's first lines name it: its name; or, where the kernel backend was
// asked for and could not run, "none — " and the reason (device_reason.h's words: "no CUDA GPU found (no
// NVIDIA driver is installed)", "the driver is older than the runtime (…)", …); or "none". Where the cost model
// predicted for another GPU (Environment::model_gpu_note), the note follows the name in parentheses.
std::string gpu_line(const Environment& env);
// The backends that ran, "reference, model"; "" when none.
std::string ran_line(const Environment& env);
// What did not run, "kernel: <reason>" for a whole backend and "kernel for fireq: <reason>" for one variant,
// joined by "; " (those not requested left out); "" when everything asked for ran.
std::string not_run_line(const Environment& env);

}  // namespace attnlab::views
