# CTest sanitize.<tool> (labels sanitize;gpu): compute-sanitizer's memcheck, racecheck or initcheck
# on attngate_verify for `initial` and `candidate` on the smoke suite. The verification harness runs
# under the tool too, so it must be clean itself (outputs are poisoned with cudaMemset, so they
# count as initialized). Prints "attngate-sanitize: SKIPPED: ..." (a CTest skip, never a pass) when
# compute-sanitizer or a GPU of the required architecture is missing.
#   cmake -DSANITIZER=<compute-sanitizer> -DTOOL=<tool> -DVERIFY=<attngate_verify> -DSCENARIOS=<dir>
#         -DMIN_SM=90 -P sanitize.cmake
if(NOT SANITIZER OR NOT EXISTS "${SANITIZER}")
  message("attngate-sanitize: SKIPPED: compute-sanitizer was not found when configuring (it ships with "
          "the CUDA Toolkit, in <cuda>/bin or <cuda>/compute-sanitizer; set ATTNGATE_COMPUTE_SANITIZER)")
  return()
endif()
execute_process(COMMAND ${VERIFY} --require-device=${MIN_SM} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  string(STRIP "${out}" out)
  message("attngate-sanitize: SKIPPED: no GPU to run on: ${out}")
  return()
endif()

set(filter "initial.smoke_*:candidate.smoke_*")
execute_process(
  COMMAND ${SANITIZER} --tool ${TOOL} --error-exitcode 1 --print-limit 50
          ${VERIFY} --gtest_filter=${filter} --scenarios=${SCENARIOS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compute-sanitizer --tool ${TOOL} on ${filter}: exit code ${rc} (errors above, or a failing test)")
endif()
if(NOT out MATCHES "\\[  PASSED  \\] ([0-9]+) tests?")
  message(FATAL_ERROR "no passing GoogleTest summary in the output")
endif()
if(CMAKE_MATCH_1 LESS 2)
  message(FATAL_ERROR "only ${CMAKE_MATCH_1} test ran; expected initial and candidate on every smoke scenario")
endif()
if(out MATCHES "\\[  SKIPPED \\]")
  message(FATAL_ERROR "some tests were skipped under the sanitizer")
endif()
if(NOT out MATCHES "(ERROR|RACECHECK) SUMMARY: 0 ")
  message(FATAL_ERROR "no clean ${TOOL} summary line in the output")
endif()
message("attngate-sanitize: ${TOOL} clean on ${CMAKE_MATCH_1} verify tests")
