# attngate targets Hopper only: sm_90a unlocks wgmma/setmaxnreg for candidates, and a single
# architecture keeps CUDA template instantiation (the dominant build cost) to one pass.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES 90a CACHE STRING "CUDA architectures (attngate supports 90a)" FORCE)
endif()
set(CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS} --expt-relaxed-constexpr -lineinfo")
# CMake 3.25 knows no C++20 flag for nvcc and would reject CUDA_STANDARD 20; newer CMakes define it.
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
set(ATTNGATE_MIN_SM 90 CACHE STRING "Minimum compute capability (major*10+minor) the gate accepts")
