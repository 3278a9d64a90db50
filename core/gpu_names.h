// attnlab core: which GPU the cost model predicts for. Its default, gpu_model "auto", is the GPU the kernels run on
// (the spec sim/specs/<id>.json whose name the runtime's device name holds), so a prediction and a measurement
// side by side are of one GPU; an experiment that pins a spec keeps it, and the results then say that the two are
// different GPUs, and no view draws a model error between them.
#pragma once

#include <optional>
#include <string>

namespace attnlab {

inline constexpr const char* kAutoGpuModel = "auto";           // gpu_model's default
inline constexpr const char* kFallbackGpuModel = "h100-sxm5";  // "auto" where no GPU, or none with a spec, is found

// The spec id of a GPU the runtime names ("NVIDIA H100 80GB HBM3" → "h100-sxm5"); "" when none matches.
std::string spec_id_for_device(const std::string& device_name);

struct ModelGpu {
  std::string id;    // the spec the model predicts for
  std::string note;  // "" when it is the device's own spec (or there is no device); else why it is not, one line
};

// gpu_model "auto": the device's spec, else kFallbackGpuModel — with a note naming a device that has no spec. A
// pinned id: itself — with a note when the device is another GPU. `device`: the runtime's name of this machine's GPU
// (the one the kernel backend runs on), none on a machine without one.
ModelGpu model_gpu_for(const std::string& gpu_model, const std::optional<std::string>& device);

// Whether a prediction for spec `model_gpu` and a measurement on `device` are of one GPU: a model error is drawn
// between them only then.
bool same_gpu(const std::string& model_gpu, const std::optional<std::string>& device);

}  // namespace attnlab
