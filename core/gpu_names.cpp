// attnlab core: the cost model's GPU (gpu_names.h).
#include "core/gpu_names.h"

#include <fmt/format.h>

#include <utility>

namespace attnlab {

std::string spec_id_for_device(const std::string& device_name) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"H100", "h100-sxm5"}, {"H200", "h200"}, {"A100", "a100-sxm4-80gb"}, {"4090", "rtx-4090"}, {"L40S", "l40s"}};
  for (const auto& [needle, id] : kNames)
    if (device_name.find(needle) != std::string::npos) return id;
  return "";
}

ModelGpu model_gpu_for(const std::string& gpu_model, const std::optional<std::string>& device) {
  const std::string own = device ? spec_id_for_device(*device) : "";
  if (gpu_model == kAutoGpuModel) {
    if (!own.empty()) return {own, ""};
    if (!device) return {kFallbackGpuModel, ""};
    return {kFallbackGpuModel, fmt::format("the {} has no spec in sim/specs: the model predicts for {}, no model error "
                                           "drawn",
                                           *device, kFallbackGpuModel)};
  }
  if (!device || own == gpu_model) return {gpu_model, ""};
  return {gpu_model, fmt::format("the model predicts for {} (gpu_model), the GPU here is the {}: different GPUs, no "
                                 "model error drawn",
                                 gpu_model, *device)};
}

bool same_gpu(const std::string& model_gpu, const std::optional<std::string>& device) {
  return device && !model_gpu.empty() && spec_id_for_device(*device) == model_gpu;
}

}  // namespace attnlab
