# unit.worker.symbols.interposer: runs cmake/symbols.cmake over interposer.cu's object, with the
# libraries and harness files every worker is checked against, and checks that every forbidden
# definition is listed with its reason and nothing else is; then again without QUIET, which must
# warn and still succeed (the build never fails on a forbidden symbol). Prints how long a run took.
#   cmake -DSCRIPT=symbols.cmake -DNM=... -DREADELF=... -DOBJECTS=... -DLIBS=a|b -DHARNESS=c|d
#         -DCACHE_DIR=... -DOUT=<file> -P check_symbols.cmake
cmake_minimum_required(VERSION 3.23)  # string(TIMESTAMP %f)
set(args -DNM=${NM} -DREADELF=${READELF} "-DOBJECTS=${OBJECTS}" "-DLIBS=${LIBS}" "-DHARNESS=${HARNESS}"
         -DCACHE_DIR=${CACHE_DIR} -DOUT=${OUT})

function(now out)
  string(TIMESTAMP s "%s" UTC)
  string(TIMESTAMP f "%f" UTC)
  math(EXPR t "${s} * 1000 + ${f} / 1000")
  set(${out} ${t} PARENT_SCOPE)
endfunction()

file(REMOVE "${OUT}")
now(t0)
execute_process(COMMAND ${CMAKE_COMMAND} ${args} -DQUIET=1 -P ${SCRIPT} RESULT_VARIABLE rc ERROR_VARIABLE err)
now(t1)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "symbols.cmake failed (${rc}): ${err}")
endif()
if(err)
  message(FATAL_ERROR "symbols.cmake with QUIET printed: ${err}")
endif()
file(READ "${OUT}" text)
message(STATUS "symbols.cmake output:\n${text}")

set(failures)
# symbol -> substrings its reason must hold
set(expect_cudaEventElapsedTime "libcudart" "cuda*")
set(expect_cuptiActivityGetNextRecord "libcupti" "cupti*")
set(expect__Znwm "libstdc++" "operator new")
set(expect_write "libc.so")
set(expect_cudaAttngateNoSuchFunction "cuda*")
set(expect__ZSt17__throw_bad_allocv "libstdc++")
set(expect__ZNK8attngate14KernelRegistry3allEv "the worker's own libattngate_kernel_api.a")
foreach(sym cudaEventElapsedTime cuptiActivityGetNextRecord _Znwm write cudaAttngateNoSuchFunction
            _ZSt17__throw_bad_allocv _ZNK8attngate14KernelRegistry3allEv)
  string(REGEX MATCH "(^|\n)${sym}\tinterposer\\.cu\\.o\t[^\n]+" line "${text}")
  if(NOT line)
    list(APPEND failures "${sym} is not listed (for interposer.cu.o)")
    continue()
  endif()
  foreach(part IN LISTS expect_${sym})
    string(FIND "${line}" "${part}" at)
    if(at EQUAL -1)
      list(APPEND failures "${sym}: the reason does not say '${part}': ${line}")
    endif()
  endforeach()
endforeach()
# allowed: the kernel and its stub, the launch function, a C name outside the CUDA namespaces, the
# COMDAT copy of an inline std::string member libstdc++ exports too, GCC's personality reference.
foreach(sym _Z17interposer_kernelPf _Z17interposer_launchPfP11CUstream_st attngate_interposer_helper
            _ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE6lengthEv DW.ref.__gxx_personality_v0
            _Z26attngate_interposer_lengthB5cxx11)
  string(FIND "${text}" "${sym}\t" at)
  if(at GREATER -1)
    list(APPEND failures "${sym} is listed but allowed")
  endif()
endforeach()
string(REGEX MATCHALL "\n" lines "\n${text}")
list(LENGTH lines n)
math(EXPR n "${n} - 1")
if(NOT n EQUAL 7)
  list(APPEND failures "${n} lines, 7 expected")
endif()

# Without QUIET: a warning naming them, and success.
now(t2)
execute_process(COMMAND ${CMAKE_COMMAND} ${args} -P ${SCRIPT} RESULT_VARIABLE rc ERROR_VARIABLE err)
now(t3)
if(NOT rc EQUAL 0)
  list(APPEND failures "symbols.cmake failed (${rc}) on forbidden symbols; it must only warn")
endif()
foreach(part "CMake Warning" "FORBIDDEN_SYMBOL" cudaEventElapsedTime cuptiActivityGetNextRecord _Znwm)
  string(FIND "${err}" "${part}" at)
  if(at EQUAL -1)
    list(APPEND failures "the warning does not say '${part}': ${err}")
  endif()
endforeach()

math(EXPR first "${t1} - ${t0}")
math(EXPR second "${t3} - ${t2}")
message(STATUS "symbols.cmake took ${first} ms (first run of this test), ${second} ms (cached symbol sets)")
if(failures)
  list(JOIN failures "\n  " failures)
  message(FATAL_ERROR "symbols.cmake over interposer.cu:\n  ${failures}")
endif()
