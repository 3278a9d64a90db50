// Which GPU the cost model predicts for (core/gpu_names.h): the device's own spec under "auto", a pinned spec kept
// with a note where the device is another GPU, and the note naming a device without a spec.
#include "core/gpu_names.h"
#include "tests/catch.h"

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

TEST_CASE("gpu names: the runtime's device names map to their specs", "[gpu-names]") {
  CHECK(spec_id_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm5");
  CHECK(spec_id_for_device("NVIDIA H200") == "h200");
  CHECK(spec_id_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm4-80gb");
  CHECK(spec_id_for_device("NVIDIA GeForce RTX 4090") == "rtx-4090");
  CHECK(spec_id_for_device("NVIDIA L40S") == "l40s");
  CHECK(spec_id_for_device("NVIDIA B200").empty());
}

TEST_CASE("gpu names: auto follows the GPU here, a pinned spec stays and says so", "[gpu-names]") {
  const ModelGpu h200 = model_gpu_for(kAutoGpuModel, "NVIDIA H200");
  CHECK(h200.id == "h200");
  CHECK(h200.note.empty());

  const ModelGpu none = model_gpu_for(kAutoGpuModel, std::nullopt);  // a machine without a GPU: the fallback, quietly
  CHECK(none.id == std::string(kFallbackGpuModel));
  CHECK(none.note.empty());

  const ModelGpu unknown = model_gpu_for(kAutoGpuModel, "NVIDIA B200");
  CHECK(unknown.id == "h100-sxm5");
  CHECK(unknown.note == "the NVIDIA B200 has no spec in sim/specs: the model predicts for h100-sxm5, no model error drawn");

  const ModelGpu pinned = model_gpu_for("h100-sxm5", "NVIDIA H200");
  CHECK(pinned.id == "h100-sxm5");
  CHECK(pinned.note ==
        "the model predicts for h100-sxm5 (gpu_model), the GPU here is the NVIDIA H200: different GPUs, no model error drawn");
  CHECK(model_gpu_for("h200", "NVIDIA H200").note.empty());
  CHECK(model_gpu_for("l40s", std::nullopt).note.empty());  // nothing measured here to compare with

  CHECK(same_gpu("h200", "NVIDIA H200"));
  CHECK_FALSE(same_gpu("h100-sxm5", "NVIDIA H200"));
  CHECK_FALSE(same_gpu("h100-sxm5", std::nullopt));
  CHECK_FALSE(same_gpu("h100-sxm5", "NVIDIA B200"));
}

}  // namespace ATTNLAB_FILE_LOCAL
}  // namespace attnlab
