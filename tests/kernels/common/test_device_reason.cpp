// Why a GPU cannot run the kernels, word for word, with the CUDA runtime's answers stubbed (device_reason.h):
// the reason a skipped [gpu] test prints, the GUI's status line shows and results.json records.
#include "kernels/common/device.h"
#include "kernels/common/device_reason.h"
#include "tests/catch.h"

#include <string>

namespace attnlab {
namespace ATTNLAB_FILE_LOCAL {

// An H100 with a driver as new as the runtime, and a build that holds its kernels.
kernels::DeviceQuery h100() {
  kernels::DeviceQuery q;
  q.runtime_version = 13000, q.driver_version = 13000;
  q.device_count = 1, q.sm_major = 9, q.sm_minor = 0;
  q.built_for = "90a";
  return q;
}

TEST_CASE("device reason: each missing thing named, the first one first", "[kernels]") {
  CHECK(kernels::unusable_reason(h100()).empty());

  kernels::DeviceQuery no_driver = h100();  // a machine without a GPU: the runtime is linked, no driver
  no_driver.driver_version = 0, no_driver.count_error = "cudaErrorInsufficientDriver", no_driver.device_count = 0;
  CHECK(kernels::unusable_reason(no_driver) == "no CUDA GPU found (no NVIDIA driver is installed)");

  kernels::DeviceQuery old_driver = h100();  // the same error code from the runtime; the versions tell
  old_driver.driver_version = 12020, old_driver.count_error = "cudaErrorInsufficientDriver";
  CHECK(kernels::unusable_reason(old_driver) ==
        "the driver is older than the runtime (the driver supports CUDA 12.2, this build's runtime is CUDA 13.0)");

  kernels::DeviceQuery no_device = h100();
  no_device.count_error = "cudaErrorNoDevice", no_device.device_count = 0;
  CHECK(kernels::unusable_reason(no_device) == "no CUDA GPU found (cudaErrorNoDevice)");
  no_device.count_error.clear();
  CHECK(kernels::unusable_reason(no_device) == "no CUDA GPU found");

  kernels::DeviceQuery turing = h100();
  turing.sm_major = 7, turing.sm_minor = 5;
  CHECK(kernels::unusable_reason(turing) == "sm_80 or newer needed (this GPU is sm_75)");

  kernels::DeviceQuery ada_on_hopper_build = h100();
  ada_on_hopper_build.sm_major = 8, ada_on_hopper_build.sm_minor = 9, ada_on_hopper_build.has_kernel_image = false;
  CHECK(kernels::unusable_reason(ada_on_hopper_build) ==
        "no kernels for this GPU's sm_89 in this build (compiled for 90a): configure with -DATTNLAB_CUDA_ARCHITECTURES=89");
  kernels::DeviceQuery hopper_on_ampere_build = h100();
  hopper_on_ampere_build.built_for = "80", hopper_on_ampere_build.has_kernel_image = false;
  CHECK(kernels::unusable_reason(hopper_on_ampere_build) ==
        "no kernels for this GPU's sm_90 in this build (compiled for 80): configure with -DATTNLAB_CUDA_ARCHITECTURES=90a");

  // A GPU-less configure's kernels on a GPU (the build folder carried over): refused, never run or timed.
  kernels::DeviceQuery build_check = h100();
  build_check.build_check = true;
  CHECK(kernels::unusable_reason(build_check) ==
        "this build's kernels are a build check, not fit to run (configured without a GPU: PTX for 90a, unoptimized): "
        "configure on the GPU's machine or with -DATTNLAB_CUDA_ARCHITECTURES=90a");
  build_check.device_count = 0;  // without a GPU the missing GPU is what is named
  CHECK(kernels::unusable_reason(build_check) == "no CUDA GPU found");
}

TEST_CASE("device reason: the wgmma kernels need sm_90a, on the GPU and in the build", "[kernels]") {
  CHECK(kernels::sm90a_refusal(9, 0, true, "90a").empty());
  CHECK(kernels::sm90a_refusal(8, 0, false, "80;89;90a") == "sm_90a needed (this GPU is sm_80)");
  CHECK(kernels::sm90a_refusal(10, 0, false, "100") == "sm_90a needed (this GPU is sm_100)");
  CHECK(kernels::sm90a_refusal(9, 0, false, "90") == "sm_90a needed (this build has no sm_90a kernels: compiled for 90)");
  CHECK(kernels::cuda_version_text(12080) == "12.8");
}

TEST_CASE("device reason: this machine's answer is usable or one of the reasons' words", "[kernels]") {
  const kernels::DeviceInfo dev = kernels::probe_device();
  INFO("probe_device: " << (dev.usable ? dev.name : dev.reason));
  CHECK(dev.usable == dev.reason.empty());
  if (!dev.usable) {
    const bool worded = dev.reason.rfind("no CUDA GPU found", 0) == 0 || dev.reason.rfind("the driver is older", 0) == 0 ||
                        dev.reason.rfind("sm_80 or newer needed", 0) == 0 || dev.reason.rfind("no kernels for this GPU", 0) == 0 ||
                        dev.reason.rfind("this build's kernels are a build check", 0) == 0;
    CHECK(worded);
  }
  CHECK(!kernels::kernels_built_for().empty());
}

}  // namespace
}  // namespace attnlab
