// attnlab core: ATTNLAB_HD marks the plain constexpr functions that host code and CUDA kernels both compile
// (the GPU layouts in core/variants/*_layout.h): __host__ __device__ under nvcc, nothing elsewhere.
#pragma once

#ifndef ATTNLAB_HD
#if defined(__CUDACC__)
#define ATTNLAB_HD __host__ __device__
#else
#define ATTNLAB_HD
#endif
#endif
