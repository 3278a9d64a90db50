// attnlab kernels: the kernel table's rows (kernel_table.h).
#include "kernels/common/kernel_table.h"

#include "kernels/fireq/fireq_backend.h"
#include "kernels/kivi/kivi_backend.h"

namespace attnlab::kernels {

namespace {

// clang-format off
constexpr KernelRow kRows[] = {
    //  variant      cannot_run             run             ring (context parallelism)
    {"flash2",      flash2_cannot_run,     flash2_run,     flash2_ring},
    {"int_flash",   int_flash_cannot_run,  int_flash_run,  int_flash_ring},
    {"flash3_fp8",  flash3_fp8_cannot_run, flash3_fp8_run, flash3_fp8_ring},
    {"turbo",       turbo_cannot_run,      turbo_run,      turbo_ring},
    {"kivi",        kivi_cannot_run,       kivi_run,       kivi_ring},
    {"fireq",       fireq_cannot_run,      fireq_run,      fireq_ring},
};
// clang-format on

}  // namespace

std::span<const KernelRow> kernel_table() { return kRows; }

const KernelRow* find_kernel_row(std::string_view variant) {
  for (const KernelRow& r : kRows)
    if (variant == r.variant) return &r;
  return nullptr;
}

}  // namespace attnlab::kernels
