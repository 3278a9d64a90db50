# attnlab_local_gpu_architecture(<var> <found_var>): the CUDA architecture of this machine's first GPU as CMake's
# CUDA_ARCHITECTURES spells it ("90a" for compute capability 9.0: the wgmma kernels need the a-suffixed
# target; "80", "89", …), or "90a" where no GPU answers (no nvidia-smi, no driver, no device); <found_var> says
# whether a GPU answered.
function(attnlab_local_gpu_architecture out found_out)
  set(architecture "90a")
  set(found FALSE)
  find_program(ATTNLAB_NVIDIA_SMI nvidia-smi)
  if(ATTNLAB_NVIDIA_SMI)
    execute_process(COMMAND ${ATTNLAB_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                    OUTPUT_VARIABLE capabilities RESULT_VARIABLE status ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE
                    TIMEOUT 20)
    if(status EQUAL 0 AND capabilities MATCHES "^([0-9]+)\\.([0-9]+)")
      set(architecture "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
      set(found TRUE)
      if(architecture STREQUAL "90")
        set(architecture "90a")
      endif()
    endif()
  endif()
  set(${out} "${architecture}" PARENT_SCOPE)
  set(${found_out} ${found} PARENT_SCOPE)
endfunction()
