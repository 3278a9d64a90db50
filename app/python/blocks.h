// attnlab python: the building blocks of the engine as functions on NumPy arrays — quantizers, progressive
// quantization, FP8/FP16/BF16 rounding, SAS and head priorities — each binding one core/ function, never a
// second copy of its arithmetic. One file per family:
//   blocks_quant.cpp        quantize, dequantize, kivi_quantize   (core/quant/quantize.h, kivi.h)
//   blocks_progressive.cpp  progressive_compress, progressive_decompress   (core/quant/progressive.h)
//   blocks_formats.cpp      round_fp8, fp8_bits, fp8_value, round_fp16, round_bf16   (core/formats)
//   blocks_sas.cpp          sas_exp, sas_table, sas_zeroed_mass   (core/sas.h)
//   blocks_heads.cpp        head_priority   (core/quant/head_priority.h)
// and blocks_args.h, the checks on their arguments.
#pragma once

#include <pybind11/pybind11.h>

namespace attnlab::python {

void bind_blocks(pybind11::module_& m);  // all of the below

void bind_quant(pybind11::module_& m);
void bind_progressive(pybind11::module_& m);
void bind_formats(pybind11::module_& m);
void bind_sas(pybind11::module_& m);
void bind_heads(pybind11::module_& m);

}  // namespace attnlab::python
