#include "app/cli/commands.h"

#include "app/cli/backends.h"
#include "app/cli/progress.h"
#include "app/report/atomic_dir.h"
#include "app/report/output_path.h"
#include "app/report/report.h"
#include "app/report/results_file.h"
#include "app/report/csv.h"
#include "app/views/bench.h"
#include "app/views/sweep.h"
#include "app/views/table.h"
#include "core/config.h"
#include "core/data/generators.h"
#include "core/error.h"
#include "core/gpu_names.h"
#include "core/json_input.h"
#include "core/sweep.h"
#include "sim/calibrate.h"
#include "sim/capacity.h"
#include "sim/capacity_table.h"
#include "sim/gpu_spec.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace attnlab::cli {

namespace fs = std::filesystem;

namespace {

// Inputs only a backend reads, checked before anything runs: the GPU the model predicts for.
void check_backend_inputs(const Experiment& e) {
  if (e.wants("model") && e.gpu_model != kAutoGpuModel) sim::load_gpu_spec(e.gpu_model);
}

Results run_experiment(const Experiment& e) {
  check_backend_inputs(e);
  ProgressBar bar;
  RunControl control;
  control.progress = [&](double f, const std::string& stage) { bar.update(f, stage); };
  return make_runner().run(e, control);
}

// Characters, not bytes, as fmt pads them ("—", "×" are one column each).
size_t columns_of(const std::string& s) {
  const auto starts_a_character = [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; };
  return size_t(std::count_if(s.begin(), s.end(), starts_a_character));
}

void print_table(const views::Table& t) {
  std::vector<size_t> width(t.columns.size());
  auto header = [&](size_t c) {
    return t.columns[c].unit.empty() ? t.columns[c].title : t.columns[c].title + " (" + t.columns[c].unit + ")";
  };
  for (size_t c = 0; c < t.columns.size(); ++c) {
    width[c] = columns_of(header(c));
    for (const auto& row : t.rows) width[c] = std::max(width[c], columns_of(row[c].text));
  }
  for (size_t c = 0; c < t.columns.size(); ++c) fmt::print("{:<{}}  ", header(c), width[c]);
  fmt::print("\n");
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (row[c].value == row[c].value) fmt::print("{:>{}}  ", row[c].text, width[c]);
      else fmt::print("{:<{}}  ", row[c].text, width[c]);
    }
    fmt::print("\n");
  }
  if (!t.legend.empty()) fmt::print("{}\n", t.legend);
}

// The files a run reads, which no output may overwrite or hold: the config and its data file or folder.
std::vector<fs::path> inputs_of(const std::string& config, const Experiment& e) {
  std::vector<fs::path> in{config};
  if (!e.data.file.empty()) in.emplace_back(e.data.file);
  return in;
}

}  // namespace

std::string configs_dir() {
  if (const char* env = std::getenv("ATTNLAB_CONFIGS")) return env;
  return std::string(ATTNLAB_SOURCE_DIR) + "/configs";
}

void override_gpu(Experiment& e, const std::string& gpu) {
  if (gpu.empty()) return;
  if (gpu == kAutoGpuModel) return void(e.gpu_model = gpu);
  sim::load_gpu_spec(gpu, "--gpu");  // an unknown id fails here, listing the known ones; every error names --gpu
  e.gpu_model = gpu;
}

void override_backends(Experiment& e, const std::vector<std::string>& backends) {
  if (backends.empty()) return;
  for (const auto& b : backends)
    if (std::find(kBackends.begin(), kBackends.end(), b) == kBackends.end())
      throw InputError(fmt::format("--backend: '{}' must be one of: {}", echo(b), fmt::join(kBackends, ", ")));
  e.backends = backends;
}

int run_command(const RunOptions& o) {
  Experiment e = load_experiment(o.config);
  override_backends(e, o.backends);
  override_gpu(e, o.gpu);
  if (!o.gpus.empty()) {  // a whole number: checked at parse time (main.cpp)
    e.problem.gpus = std::stoll(o.gpus);
    try {
      validate(e.problem);
    } catch (const InputError& err) {
      throw InputError(fmt::format("--gpus: {}", err.what()));
    }
  }
  const report::OutputRule json_rule{"--json", inputs_of(o.config, e)};
  if (!o.json_out.empty()) report::check_results_file(o.json_out, json_rule);  // before the run: a refusal costs nothing
  const report::OutputRule save_rule{"--save", inputs_of(o.config, e), true};
  if (!o.save.empty()) report::check_output_folder(o.save, save_rule);
  if (!o.baseline.empty()) {  // checked before the run: a typo costs nothing
    if (variants_named(e, o.baseline) == 0)
      throw InputError(fmt::format("--baseline: '{}' is not a listed variant (label or id)", echo(o.baseline)));
  }
  const Results r = run_experiment(e);
  if (!o.json_out.empty()) report::write_results_file(r, o.json_out, json_rule);
  if (!o.save.empty()) fmt::print("saved {}\n", report::write_results_folder(r, o.save, save_rule).string());
  // What ran first: a backend that did not run, and why, is read before any number.
  fmt::print("ran: {} · GPU: {}\n", views::ran_line(r.environment), views::gpu_line(r.environment));
  if (const std::string not_run = views::not_run_line(r.environment); !not_run.empty())
    fmt::print("not run: {}\n", not_run);
  print_table(o.baseline.empty() ? views::results_table(r) : views::with_time_ratio(views::results_table(r), o.baseline));
  return 0;
}

namespace {

// A report from results computed elsewhere (a GPU server, an earlier run): nothing is run; the views are
// drawn from the saved Results, whose environment says where and on which GPU they were computed.
int report_from_results(const ReportOptions& o) {
  const fs::path file = report::results_file_of(o.results);
  const Results r = report::read_results(o.results, "--results");
  const report::ReportRequest how{o.pdf, "--out", {fs::absolute(file)}};
  report::check_output_folder(o.out, {how.where, how.inputs, true});
  if (o.pdf) report::pdf_printer();
  fmt::print("{}\n", report::write_report(r, o.out, how).string());
  return 0;
}

}  // namespace

int report_command(const ReportOptions& o) {
  if (o.config.empty() == o.results.empty())
    throw InputError(o.config.empty() ? "--config or --results: one is required; attnlab report --help lists the options"
                                      : "--results: runs nothing, so it takes no --config; give one of them");
  if (!o.results.empty()) {
    if (!o.gpu.empty()) throw InputError("--gpu: --results runs nothing; the saved results say which GPU the model used");
    return report_from_results(o);
  }
  Experiment e = load_experiment(o.config);
  override_gpu(e, o.gpu);
  const report::ReportRequest how{o.pdf, "--out", inputs_of(o.config, e)};
  // Before the run: a folder that may not be replaced, or no Chromium for --pdf, costs nothing.
  report::check_output_folder(o.out, {how.where, how.inputs, true});
  if (o.pdf) report::pdf_printer();
  const Results r = run_experiment(e);
  // A lesson: every step's run, for the tour. Steps that change nothing show the config's own run, and
  // steps that make the same change share one run.
  std::map<std::string, Results> step_runs;
  report::ReportRequest lesson_how = how;
  for (size_t k = 0; e.lesson && k < e.lesson->steps.size(); ++k) {
    const nlohmann::json& set = e.lesson->steps[k].set;
    if (set.empty()) {
      lesson_how.tour.push_back(&r);
      continue;
    }
    auto it = step_runs.find(set.dump());
    if (it == step_runs.end()) it = step_runs.emplace(set.dump(), run_experiment(step_experiment(e, k))).first;
    lesson_how.tour.push_back(&it->second);
  }
  fmt::print("{}\n", report::write_report(r, o.out, lesson_how).string());
  return 0;
}

int sweep_command(const SweepOptions& o) {
  Experiment e = load_experiment(o.config);
  override_backends(e, o.backends);
  override_gpu(e, o.gpu);
  std::vector<SweepAxis> axes;
  for (const auto& spec : o.vary) axes.push_back(parse_axis(spec));
  const bool from_config = axes.empty();
  if (from_config) axes = e.sweep;
  if (axes.empty()) throw InputError("--vary: no axis: give --vary PATH=v1,v2,… or a \"sweep\" in the config");
  // Every point is built and checked before the first one runs: a bad value costs nothing.
  const std::vector<SweepPoint> points = expand_sweep(e, axes, from_config ? echo(o.config) + ": sweep" : "--vary");
  for (const auto& pt : points) check_backend_inputs(pt.experiment);
  // The default path's folders (out/sweep/) are created only when the CSV is written, after every point ran.
  const fs::path csv = o.csv_out.empty() ? fs::path("out/sweep") / (fs::path(o.config).stem().string() + ".csv")
                                         : fs::path(o.csv_out);
  const report::OutputRule csv_rule{"--csv", inputs_of(o.config, e), o.csv_out.empty()};
  report::check_output_file(csv, csv_rule, report::OutputKind::sweep_csv);
  ProgressBar bar;
  std::vector<Results> results;
  std::vector<std::vector<std::string>> values;
  std::vector<std::string> paths;
  for (const auto& a : axes) paths.push_back(a.path);
  for (size_t i = 0; i < points.size(); ++i) {
    RunControl control;
    control.progress = [&](double f, const std::string& stage) {
      bar.update((double(i) + f) / double(points.size()),
                 fmt::format("point {}/{} {}: {}", i + 1, points.size(), fmt::join(points[i].values, ","), stage));
    };
    results.push_back(make_runner().run(points[i].experiment, control));
    values.push_back(points[i].values);
  }
  const views::Table t = views::sweep_table(paths, values, results);
  print_table(t);
  report::write_output_file(csv, report::to_csv(t), csv_rule, report::OutputKind::sweep_csv);
  fmt::print("wrote {}\n", csv.string());
  return 0;
}

int capacity_command(const CapacityOptions& o) {
  const sim::LlmConfig m = sim::load_llm(o.model, "--model");
  const sim::GpuSpec g = sim::load_gpu_spec(o.gpu, "--gpu");
  sim::check_context(o.context);
  const std::vector<VariantRequest> variants = o.config.empty()
                                                   ? sim::default_capacity_variants(m, "--model " + echo(o.model))
                                                   : load_experiment(o.config).variants;
  const std::vector<sim::CapacityRow> rows = sim::capacity_table(m, g, o.context, variants);
  const sim::Capacity& head = rows.front().capacity;
  fmt::print("{} on {} at {} tokens of context: weights {:.1f} GB (FP16), workspace {:.1f} GB, {:.1f} GB for the cache\n",
             m.name, g.name, o.context, head.weights_bytes / 1e9, head.workspace_bytes / 1e9, head.free_bytes / 1e9);
  views::Table t;
  t.columns = {{"variant", "variant", ""},          {"bytes_per_token", "cache per token", "bytes"},
               {"seq_bytes", "per sequence", "MiB"}, {"max_batch", "max batch", ""},
               {"step_ms", "decode step", "ms"},     {"tokens_per_s", "throughput", "tokens/s"},
               {"speedup", "× first", ""}};
  for (const auto& row : rows) {
    const sim::Capacity& c = row.capacity;
    const auto num = views::number_cell;
    const views::Cell none{views::kNoNumber, std::nan("")};
    // A variant that does not fit one sequence has no decode step: a dash, not a 0.00 ms step.
    auto fits = [&](double x, const char* f) { return row.fits() ? num(x, f) : none; };
    t.rows.push_back({views::Cell{echo(row.format.variant), std::nan("")}, num(row.bytes_per_token, "{:.0f}"),
                      num(c.seq_bytes / (1 << 20), "{:.1f}"), num(double(c.max_batch), "{:.0f}"),
                      fits(c.step_ms, "{:.2f}"), fits(c.tokens_per_s, "{:.0f}"), fits(row.speedup, "{:.2f}")});
  }
  print_table(t);
  return 0;
}

int calibrate_command(const CalibrateOptions& o) {
  std::string file_gpu;
  const std::vector<sim::Measurement> m = sim::load_measurements(o.measurements, &file_gpu);
  if (o.gpu.empty() && file_gpu.empty()) throw InputError("--gpu: not given and the measurements file names no GPU");
  // The spec the factors are written into: --gpu (an id or a path), else the file's GPU id (never a path).
  const std::string gpu = o.gpu.empty() ? file_gpu : o.gpu;
  const std::string gpu_where = o.gpu.empty() ? echo_path(o.measurements) + ".gpu" : "--gpu";
  const std::string spec_path = sim::gpu_spec_path(gpu, gpu_where);
  const sim::GpuSpec g = sim::load_gpu_spec(gpu, gpu_where);
  if (!file_gpu.empty() && g.id != file_gpu)
    throw InputError(fmt::format("--gpu: '{}' but the measurements were taken on '{}'", echo(g.id), file_gpu));
  // The spec is read and written: it may be replaced (it loads as a spec), the measurements may not.
  const report::OutputRule spec_rule{gpu_where, {o.measurements}};
  if (!o.dry_run) report::check_output_file(spec_path, spec_rule, report::OutputKind::gpu_spec);  // before the fit
  const sim::Calibration c = [&] {
    ProgressBar bar;  // leave-one-out refits N times: long for hundreds of measurements
    return sim::calibrate(g, m, {}, [&](double f, const std::string& stage) { bar.update(f, stage); });
  }();
  views::Table t;
  t.columns = {{"kernel", "kernel", ""},          {"measured_ms", "measured", "ms"}, {"before_ms", "model before", "ms"},
               {"after_ms", "model after", "ms"}, {"loo_ms", "leave-one-out", "ms"}, {"error_after", "error after", "%"}};
  for (const auto& r : c.rows) {
    auto ms = [](double x) { return views::number_cell(x, "{:.4f}"); };
    const double err = (r.after_ms / r.measured_ms - 1) * 100;
    t.rows.push_back({views::Cell{r.label, std::nan("")}, ms(r.measured_ms), ms(r.before_ms), ms(r.after_ms),
                      ms(r.loo_ms), views::number_cell(err, "{:+.1f}")});
  }
  print_table(t);
  for (const auto& [u, e] : c.efficiency)
    if (u == "cta_overhead_us") fmt::print("CTA overhead  {:.2f} µs per wave\n", e);
    else if (u == "issue_latency_cycles") fmt::print("latency       {:.2f} cycles between a warp's instructions\n", e);
    else if (u == "link_efficiency") fmt::print("links         {:.3f} of their rate per direction\n", e);
    else if (u == "link_latency_us") fmt::print("links         {:.1f} µs per transfer\n", e);
    else fmt::print("efficiency {:<10} {:.3f}\n", u, e);
  if (!c.not_identifiable.empty())
    fmt::print("not identifiable from these measurements (left at the datasheet's value): {}\n",
               fmt::join(c.not_identifiable, ", "));
  fmt::print("median |error|: before {:.1f}%, after {:.1f}%, leave-one-out {:.1f}%\n", 100 * c.median_error_before,
             100 * c.median_error_after, 100 * c.median_error_loo);
  if (!o.dry_run) {
    report::write_output_file(spec_path, sim::spec_with_calibration(spec_path, c, m.size(), o.measurements), spec_rule,
                              report::OutputKind::gpu_spec);
    fmt::print("wrote the factors into {}\n", echo_path(spec_path));
  }
  return 0;
}

int bench_command(const BenchOptions& o) {
  Experiment e = load_experiment(o.config);
  std::vector<SweepAxis> axes;
  for (const auto& spec : o.vary) axes.push_back(parse_axis(spec));
  if (axes.empty()) axes = e.sweep;
  std::vector<SweepPoint> points;
  if (axes.empty()) points.push_back({{}, e});
  else points = expand_sweep(e, axes, o.vary.empty() ? echo(o.config) + ": sweep" : "--vary");
  const report::OutputRule out_rule{"--out", inputs_of(o.config, e)};
  if (!o.out.empty()) report::check_output_file(o.out, out_rule, report::OutputKind::measurements_json);
  Runner runner = make_runner();
  std::vector<Results> runs;
  std::string skipped;
  ProgressBar bar;
  for (size_t i = 0; i < points.size(); ++i) {
    Experiment x = points[i].experiment;
    x.backends = {"kernel", "model"};
    RunControl control;
    control.ground_truth = false;  // timings only: no FP64 truth at long sequences
    control.progress = [&](double f, const std::string& stage) {
      bar.update((double(i) + f) / double(points.size()), fmt::format("point {}/{}: {}", i + 1, points.size(), stage));
    };
    runs.push_back(runner.run(x, control));
    for (const auto& s : runs.back().environment.skipped)
      if (s.backend == "kernel" && skipped.empty()) skipped = s.reason;
  }
  const views::Table t = views::bench_table(runs);
  if (t.rows.empty()) {
    fmt::print("attnlab bench: no kernel ran: {}\n", skipped.empty() ? "no variant has a kernel" : skipped);
    return 0;
  }
  print_table(t);
  if (!o.out.empty()) {
    report::write_output_file(o.out, sim::measurements_json(runs).dump(1) + "\n", out_rule,
                              report::OutputKind::measurements_json);
    fmt::print("wrote {}\n", o.out);
  }
  return 0;
}

int gpus_command() {
  for (const auto& g : sim::all_gpu_specs()) {
    std::string tensor;
    for (const auto& [t, v] : g.tensor_tflops) tensor += fmt::format(" {} {:g}", t, v);
    fmt::print("{:<16} {:<26} {:>3} SMs  {:>5.0f} GB/s  {:>4.0f} GB  tensor TFLOPS:{}{}\n", g.id, g.name, g.sm_count,
               g.hbm_bandwidth_gbs, g.hbm_capacity_gb, tensor, g.efficiency.empty() ? "" : "  (calibrated)");
  }
  return 0;
}

// Lists the configs under configs/ (or $ATTNLAB_CONFIGS) with their titles. Each file is read as every
// JSON input is (core/json_input.h): a FIFO, a folder named *.json or a broken file is refused, naming it,
// rather than read until it blocks; a title is echoed, one line whatever it holds.
int presets_command() {
  std::vector<fs::path> files;
  const fs::path root = configs_dir();
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->path().extension() == ".json") files.push_back(it->path());
  if (ec) fail_input(echo_path(root.string()), fmt::format("cannot list the presets folder ({})", ec.message()));
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const nlohmann::json j = read_json_file(f.string());
    if (!j.is_object()) fail_input(echo_path(f.string()), "expected a JSON object (an experiment config)");
    if (j.contains("title") && !j["title"].is_string())
      fail_input(echo_path(f.string()) + ".title", "expected a string");
    fmt::print("{:<36} {}\n", echo_path(fs::relative(f, root).string()), echo(j.value("title", ""), 300));
  }
  return 0;
}

// The generators' registry (core/data/generators.h) as text: each parameter's default, range and help — for
// llm_like the paper each default comes from.
int generators_command() {
  for (const auto& g : data::generator_registry()) {
    fmt::print("{}: {}\n", g.name, g.help);
    const nlohmann::json defaults = ParamValues::defaults(g.params).to_json();
    for (const ParamSpec& row : g.params) {
      const std::string range = row.type == ParamType::boolean ? "true or false"
                                : row.type == ParamType::choice ? fmt::format("{}", fmt::join(row.choices, ", "))
                                                                : fmt::format("[{:g}, {:g}]", row.min, row.max);
      fmt::print("  {:<18} {:<10} {:<16} {}\n", row.name, defaults[row.name].dump(), range, row.help);
    }
  }
  return 0;
}

}  // namespace attnlab::cli
