// attnlab core: the large probe arrays of a Results, kept out of results.json (schema "attnlab.results/2")
// in NumPy .npy files beside it, and read back lazily (DESIGN.md, "Results travel").
//
// In results.json a probe is either inline, as in schema /1,
//   {"shape": [5], "values": [...], "labels": [...], "unit": "bytes", "help": "..."}
// or a sidecar reference, its values in an .npy file named relative to results.json's folder:
//   {"npy": "arrays/int_flash.kernel.scales.q.npy", "dtype": "<f4", "shape": [4, 16, 16384],
//    "summary": {"min": ..., "max": ..., "mean": ...}, "unit": "", "help": "..."}
#pragma once

#include "core/probes.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace attnlab {

// Arrays of more values than this go to a sidecar. 256 keeps inline what does not grow with the sequence
// (labelled counts, per-head arrays up to 256 (batch, head) pairs, the 121-point SAS curves) and moves out
// everything that does (per-token and per-block scales, logsumexp, channel ranges of every head, the
// tracer's (steps × rows) running max and sum). An inline array costs at most ~256 × 30 bytes of
// indented JSON, so results.json stays within a few hundred kB per variant at any problem size.
inline constexpr size_t kInlineProbeMax = 256;

// One sidecar to write: `name` inside the plan's dir (results.json names it dir/name).
struct Sidecar {
  std::string name;         // e.g. "flash2.kernel.lse.npy"
  const ProbeArray* probe;  // points into the Results being saved
};

// Decides, probe by probe, what a saved results.json holds inline and what goes to `dir` (relative to
// the JSON's folder: "arrays" in a results folder, "<file>.arrays" beside a single file).
class SidecarPlan {
 public:
  explicit SidecarPlan(std::string dir) : dir_(std::move(dir)) {}
  nlohmann::json probe_json(const ProbeArray& p, const std::string& variant, const std::string& backend,
                            const std::string& name);
  const std::vector<Sidecar>& sidecars() const { return sidecars_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<Sidecar> sidecars_;
  std::set<std::string> taken_;
};

// The .npy file of one sidecar (loads the probe's values if they are themselves deferred).
std::string sidecar_bytes(const Sidecar& s);

// A probe from results.json: inline, or a sidecar reference whose values are read from json_dir / npy
// the first time they are asked for. `what` names the probe in messages ("probe scales.q of int_flash,
// kernel"); `file` names results.json. A reference that leaves the folder (absolute, "..") is refused.
ProbeArray probe_from_saved(const nlohmann::json& j, const std::filesystem::path& json_dir, const std::string& file,
                            const std::string& what);

}  // namespace attnlab
