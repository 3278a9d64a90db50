# Build-time settings. Precompiled headers: the standard library, nlohmann-json, fmt and Eigen's core (cmake/pch/common.h) are
# parsed by nearly every translation unit — about 200 000 lines each time, most of a test file's compile —
# so each target parses them once, into its own precompiled header (one per target: the targets' flags
# differ, and a header precompiled with other flags is silently ignored). The tests add Catch2, the Python
# module pybind11. C++ only: nvcc's .cu files do not take them. ATTNLAB_PCH=OFF builds without, to check
# that every file includes what it uses.
option(ATTNLAB_PCH "Precompile the headers every translation unit parses (faster builds)" ON)

# attnlab_precompile_headers(<target> [<header in cmake/pch/>]): common.h unless another is named.
function(attnlab_precompile_headers target)
  if(NOT ATTNLAB_PCH)
    return()
  endif()
  set(header common.h)
  if(ARGC GREATER 1)
    set(header ${ARGV1})
  endif()
  target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/pch/${header}>")
  # GCC 12 loses the system-header mark of the standard library's code when it comes from a precompiled header,
  # so its known false positives inside <string> (an inlined memcpy "out of the bounds" of a moved-from
  # std::string, a "maybe uninitialized" size) are reported as if they were ours. They stay warnings, not
  # errors: ATTNLAB_WERROR=ON does not fail on them; the sanitizer build checks the same bounds at run time.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=array-bounds
                           -Wno-error=maybe-uninitialized -Wno-error=stringop-overflow -Wno-error=stringop-overread>)
  endif()
endfunction()

# attnlab_light_optimization(<target>): -O1 for code whose speed does not matter — the tests' own code (the
# reference, the model and the kernels' hosts they call stay at the build type's -O3 or -O2) and the front ends
# (the CLI, the report, the GUI, the Python bindings). -O3's inlining and vectorization cost these files
# about a third of their compile time for nothing a user or a test waits on.
# Not in the sanitizer and fuzzing builds: there the instrumented front ends do real work under the input corpus'
# 30-second hang limit (`calibrate --dry-run` over 1000 measurements took 29 s alone at -O1 with ASan + UBSan).
function(attnlab_light_optimization target)
  if(ATTNLAB_SANITIZERS)
    return()
  endif()
  target_compile_options(${target} PRIVATE $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>:-O1>)
endfunction()
