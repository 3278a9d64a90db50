// attnlab kernels: the wording of device_reason.h — one function per question, first missing thing first.
#include "kernels/common/device_reason.h"

#include <fmt/format.h>

namespace attnlab::kernels {

std::string cuda_version_text(int version) { return fmt::format("{}.{}", version / 1000, version % 1000 / 10); }

std::string unusable_reason(const DeviceQuery& q) {
  // Without a driver the runtime answers every call with "insufficient driver", which misleads: say what is
  // missing. A driver that is there but older than the runtime gives the same error code, so the versions
  // decide between the two.
  if (q.driver_version == 0) return "no CUDA GPU found (no NVIDIA driver is installed)";
  if (q.driver_version < q.runtime_version)
    return fmt::format("the driver is older than the runtime (the driver supports CUDA {}, this build's runtime is CUDA {})",
                       cuda_version_text(q.driver_version), cuda_version_text(q.runtime_version));
  if (!q.count_error.empty()) return fmt::format("no CUDA GPU found ({})", q.count_error);
  if (q.device_count == 0) return "no CUDA GPU found";
  if (q.sm_major < 8) return fmt::format("sm_80 or newer needed (this GPU is sm_{}{})", q.sm_major, q.sm_minor);
  // A GPU-less configure compiles the kernels as a build check (CMakeLists.txt): unoptimized PTX would run, JIT
  // compiled, at a fraction of the speed, and every time measured with it would be false.
  if (q.build_check)
    return fmt::format("this build's kernels are a build check, not fit to run (configured without a GPU: PTX for {0}, "
                       "unoptimized): configure on the GPU's machine or with -DATTNLAB_CUDA_ARCHITECTURES={1}{2}{3}",
                       q.built_for, q.sm_major, q.sm_minor, q.sm_major == 9 && q.sm_minor == 0 ? "a" : "");
  if (!q.has_kernel_image)
    return fmt::format("no kernels for this GPU's sm_{0}{1} in this build (compiled for {2}): configure with "
                       "-DATTNLAB_CUDA_ARCHITECTURES={0}{1}{3}",
                       q.sm_major, q.sm_minor, q.built_for, q.sm_major == 9 && q.sm_minor == 0 ? "a" : "");
  return "";
}

std::string sm90a_refusal(int sm_major, int sm_minor, bool wgmma_image, const std::string& built_for) {
  if (sm_major != 9 || sm_minor != 0) return fmt::format("sm_90a needed (this GPU is sm_{}{})", sm_major, sm_minor);
  if (!wgmma_image) return fmt::format("sm_90a needed (this build has no sm_90a kernels: compiled for {})", built_for);
  return "";
}

}  // namespace attnlab::kernels
