// attnlab report: the kinds of file attnlab writes, and how an existing file is told to be attnlab's own
// output of a kind. The output-file rule (output_path.h) replaces an existing file only when it is: the
// file analogue of the marker that lets attnlab replace a folder. Each kind is one row of a table
// (output_kinds.cpp): its name in messages, the most of the file that is read, and its signature —
//   results JSON       a top-level "schema": "attnlab.results/…" (run --json)
//   measurements JSON  a top-level "schema": "attnlab.measurements/…" (bench --out)
//   sweep CSV          the header a sweep writes: its one or two varied paths, then variant,backend and
//                      the results columns (sweep --csv, out/sweep/<config>.csv)
//   GPU spec           loads as a GPU spec (calibrate writes its factors into one)
//   screenshot PNG     a PNG whose tEXt "Software" chunk names attnlab (png_text.h; attnlab-gui --screenshot)
// Only a bounded start of a file is read, never more than attnlab would read back; a file too large for
// a kind, binary or cut short is simply not of that kind.
#pragma once

#include <filesystem>
#include <string_view>

namespace attnlab::report {

enum class OutputKind { results_json, measurements_json, sweep_csv, gpu_spec, screenshot_png };

// The kind as messages name it: "attnlab results JSON".
std::string_view kind_name(OutputKind kind);

// Whether the regular file at `file` is attnlab's own output of `kind` (false also when it cannot be read).
bool is_own_output(const std::filesystem::path& file, OutputKind kind);

}  // namespace attnlab::report
