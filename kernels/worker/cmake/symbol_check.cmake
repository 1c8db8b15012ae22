# Included by kernels/worker/CMakeLists.txt: the forbidden-symbol check of every worker
# (cmake/symbols.cmake writes attngate_worker_<name>.symbols after each link, read with
# attngate/worker/symbols.hpp; the gate's FORBIDDEN_SYMBOL) and its CPU tests.

find_program(ATTNGATE_READELF readelf)  # COMDAT groups for cmake/symbols.cmake (without it, nm's types decide)

# The libraries whose symbols a kernel library must not define: what every worker links or loads.
# The CUDA runtime (static and shared), CUPTI, the driver (the machine's libcuda, else the toolkit's
# stub), NVML (likewise), and the C and C++ runtimes the compiler links (asked of the compiler). The
# kernel library's own imported libraries (cuBLAS, cuDNN ...) are added per worker.
function(_attngate_first_existing out)
  foreach(f IN LISTS ARGN)
    if(f AND NOT f MATCHES "-NOTFOUND$" AND EXISTS "${f}" AND NOT IS_DIRECTORY "${f}")
      get_filename_component(f "${f}" REALPATH)
      set(${out} "${f}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()
find_library(ATTNGATE_LIBCUDA NAMES libcuda.so.1 cuda NO_CACHE)  # the installed driver, not the stub
find_library(ATTNGATE_LIBNVML NAMES libnvidia-ml.so.1 nvidia-ml NO_CACHE)
set(_interpose_libs)
set(_interpose_missing)
foreach(group IN ITEMS cudart_static cudart cupti cuda nvml)
  if(group STREQUAL "cudart_static")
    set(_candidates "${CUDA_cudart_static_LIBRARY}" "${CUDAToolkit_LIBRARY_DIR}/libcudart_static.a")
  elseif(group STREQUAL "cudart")
    set(_candidates "${CUDA_cudart_LIBRARY}" "${CUDAToolkit_LIBRARY_DIR}/libcudart.so")
  elseif(group STREQUAL "cupti")
    set(_candidates "${CUDA_cupti_LIBRARY}")
  elseif(group STREQUAL "cuda")
    set(_candidates "${ATTNGATE_LIBCUDA}" "${CUDAToolkit_LIBRARY_DIR}/stubs/libcuda.so")
  else()
    set(_candidates "${ATTNGATE_LIBNVML}" "${CUDA_nvml_LIBRARY}" "${CUDAToolkit_LIBRARY_DIR}/stubs/libnvidia-ml.so")
  endif()
  _attngate_first_existing(_lib ${_candidates})
  if(_lib)
    list(APPEND _interpose_libs "${_lib}")
  else()
    list(APPEND _interpose_missing lib${group})
  endif()
endforeach()
foreach(name IN ITEMS libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1 libstdc++.so.6
                      libgcc_s.so.1 ld-linux-x86-64.so.2 ld-linux-aarch64.so.1 libc_nonshared.a libgcc.a libgcc_eh.a)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${name}
                  OUTPUT_VARIABLE _path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${_path}")
    _attngate_first_existing(_lib "${_path}")
    if(_lib)
      list(APPEND _interpose_libs "${_lib}")
    endif()
  elseif(name MATCHES "^lib(c|m|stdc\\+\\+|gcc_s)\\.so")
    list(APPEND _interpose_missing ${name})
  endif()
endforeach()
list(REMOVE_DUPLICATES _interpose_libs)
if(_interpose_missing)
  message(STATUS "attngate: forbidden-symbol check without ${_interpose_missing} (not found; their C names "
                 "in the CUDA namespaces are still forbidden)")
endif()
set(ATTNGATE_INTERPOSE_LIBS "${_interpose_libs}" CACHE INTERNAL "libraries whose symbols a kernel library must not define")
set(ATTNGATE_SYMBOLS_CACHE ${CMAKE_CURRENT_BINARY_DIR}/symbol_sets)

# The files of the imported libraries a target links, transitively (CUDA::cublas -> cublasLt ...).
function(_attngate_imported_files target out)
  set(todo ${target})
  set(seen)
  set(files)
  while(todo)
    list(POP_FRONT todo t)
    if(NOT TARGET ${t} OR t IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${t})
    get_target_property(_imported ${t} IMPORTED)
    if(_imported)
      get_target_property(_loc ${t} IMPORTED_LOCATION)
      if(NOT _loc)
        get_target_property(_loc ${t} IMPORTED_LOCATION_RELEASE)
      endif()
      _attngate_first_existing(_loc "${_loc}")
      if(_loc)
        list(APPEND files "${_loc}")
      endif()
    endif()
    get_target_property(_deps ${t} INTERFACE_LINK_LIBRARIES)
    if(_deps)
      foreach(d IN LISTS _deps)
        string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" d "${d}")
        if(TARGET ${d})
          list(APPEND todo ${d})
        endif()
      endforeach()
    endif()
  endwhile()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# attngate_symbols_command(<var> OBJECTS <genex or files> OUT <file> [HARNESS <files>] [EXTRA_LIBS <files>])
# sets <var> to the command line that runs cmake/symbols.cmake (for a POST_BUILD step or a test).
function(attngate_symbols_command var)
  cmake_parse_arguments(PARSE_ARGV 1 arg "QUIET" "OBJECTS;OUT" "HARNESS;EXTRA_LIBS")
  set(libs ${ATTNGATE_INTERPOSE_LIBS} ${arg_EXTRA_LIBS})
  list(REMOVE_DUPLICATES libs)
  list(JOIN libs "|" libs)
  list(JOIN arg_HARNESS "|" harness)
  set(cmd ${CMAKE_COMMAND} -DNM=${ATTNGATE_NM} -DREADELF=${ATTNGATE_READELF} "-DOBJECTS=${arg_OBJECTS}"
          "-DLIBS=${libs}" "-DHARNESS=${harness}" -DCACHE_DIR=${ATTNGATE_SYMBOLS_CACHE} -DOUT=${arg_OUT})
  if(arg_QUIET)
    list(APPEND cmd -DQUIET=1)
  endif()
  list(APPEND cmd -P ${PROJECT_SOURCE_DIR}/kernels/worker/cmake/symbols.cmake)
  set(${var} "${cmd}" PARENT_SCOPE)
endfunction()

# attngate_worker_symbols(<kernel library name>): a POST_BUILD step of attngate_worker_<name> that
# writes attngate_worker_<name>.symbols: what the kernel library defines that a library the worker
# links or loads (above, and the library's own imported libraries), or the worker's own code, defines
# too. It warns and never fails the build, so the gate can name the symbols.
function(attngate_worker_symbols name)
  _attngate_imported_files(attngate_kernel_${name} extra)
  attngate_symbols_command(cmd
    OBJECTS "$<JOIN:$<TARGET_OBJECTS:attngate_kernel_${name}>,|>"
    OUT $<TARGET_FILE:attngate_worker_${name}>.symbols
    HARNESS "$<JOIN:$<TARGET_OBJECTS:attngate_worker_${name}>,|>" "$<JOIN:$<TARGET_OBJECTS:attngate_plugin_host>,|>"
            $<TARGET_FILE:attngate_worker_trace> $<TARGET_FILE:attngate_kernel_api>
    EXTRA_LIBS ${extra})
  add_custom_command(TARGET attngate_worker_${name} POST_BUILD COMMAND ${cmd} VERBATIM)
endfunction()

# CPU tests of the forbidden-symbol check: an object that interposes on what a worker calls
# (tests/interposer.cu, never linked into anything) must be listed with its reasons
# (unit.worker.symbols.interposer, which also prints how long a check takes), the shipped workers'
# lists must be empty, and the reader (symbols.hpp) must refuse what it cannot read (unit.worker.Symbols.*).
add_library(attngate_worker_test_interposer OBJECT tests/interposer.cu)
target_link_libraries(attngate_worker_test_interposer PRIVATE attngate::kernel_api CUDA::cupti)
list(JOIN ATTNGATE_INTERPOSE_LIBS "|" _libs)
add_test(NAME unit.worker.symbols.interposer
  COMMAND ${CMAKE_COMMAND} -DSCRIPT=${CMAKE_CURRENT_SOURCE_DIR}/cmake/symbols.cmake -DNM=${ATTNGATE_NM}
          -DREADELF=${ATTNGATE_READELF} "-DOBJECTS=$<JOIN:$<TARGET_OBJECTS:attngate_worker_test_interposer>,|>"
          "-DLIBS=${_libs}" -DHARNESS=$<TARGET_FILE:attngate_kernel_api> -DCACHE_DIR=${ATTNGATE_SYMBOLS_CACHE}
          -DOUT=${CMAKE_CURRENT_BINARY_DIR}/interposer.symbols -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/check_symbols.cmake)
set_tests_properties(unit.worker.symbols.interposer PROPERTIES LABELS unit TIMEOUT 120
                     FIXTURES_SETUP worker_interposer_symbols)

add_executable(attngate_worker_unit_tests tests/test_symbols.cpp)
target_link_libraries(attngate_worker_unit_tests PRIVATE attngate::worker_protocol GTest::gtest_main)
target_compile_definitions(attngate_worker_unit_tests PRIVATE
  ATTNGATE_WORKER_CANDIDATE="$<TARGET_FILE:attngate_worker_candidate>"
  ATTNGATE_WORKER_INITIAL="$<TARGET_FILE:attngate_worker_initial>"
  ATTNGATE_INTERPOSER_BASE="${CMAKE_CURRENT_BINARY_DIR}/interposer")
add_dependencies(attngate_worker_unit_tests attngate_worker_candidate attngate_worker_initial
                 attngate_worker_test_interposer)
include(GoogleTest)
gtest_discover_tests(attngate_worker_unit_tests TEST_PREFIX unit.worker. TEST_FILTER -Symbols.InterposerIsListed
                     PROPERTIES LABELS unit)
gtest_discover_tests(attngate_worker_unit_tests TEST_PREFIX unit.worker. TEST_FILTER Symbols.InterposerIsListed
                     PROPERTIES LABELS unit FIXTURES_REQUIRED worker_interposer_symbols)
