# Tests generated from registry x scenarios. The test binary writes its own CTest script after each
# build (and whenever a suite file changes), so names and labels follow the YAML suites.
include(GoogleTest)

# Each test writes its JSON outcome into results_dir (read by the gate).
#   attngate_generated_tests(<target> <stem> <results_dir> [GATE_BENCH <target> GATE_TOOL <target>
#                            GATE_JUDGE <target>])
# With GATE_BENCH (attngate_bench_judge), GATE_JUDGE (attngate_verify_judge) and GATE_TOOL (attngate),
# the gate's kernels running in the workers of ATTNGATE_WORKERS_DIR, the script also holds the gate's own
# tests when the suites include `gate` (gate.setup, gate.device, gate.performance, gate.report:
# agent_hooks/README.md), all in one script so that their DEPENDS order them.
function(attngate_generated_tests target stem results_dir)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "GATE_BENCH;GATE_TOOL;GATE_JUDGE" "")
  file(GLOB _suites CONFIGURE_DEPENDS ${ATTNGATE_SCENARIO_DIR}/*.yaml)
  set(_script ${CMAKE_CURRENT_BINARY_DIR}/${stem}.cmake)
  set(_gate_args)
  set(_gate_deps)
  if(arg_GATE_BENCH AND arg_GATE_TOOL)
    get_property(_workers GLOBAL PROPERTY ATTNGATE_WORKERS)
    list(TRANSFORM _workers REPLACE "^attngate_worker_" "" OUTPUT_VARIABLE _worker_libs)
    list(JOIN _worker_libs "," _worker_libs)
    set(_gate_args --emit-worker-libs=${_worker_libs}
                   --emit-bench=$<TARGET_FILE:${arg_GATE_BENCH}> --emit-attngate=$<TARGET_FILE:${arg_GATE_TOOL}>
                   --emit-judge=$<TARGET_FILE:${arg_GATE_JUDGE}> --emit-workers=${ATTNGATE_WORKERS_DIR}
                   --emit-build-dir=${CMAKE_BINARY_DIR} --emit-source-dir=${CMAKE_SOURCE_DIR})
    set(_gate_deps ${arg_GATE_BENCH} ${arg_GATE_TOOL} ${arg_GATE_JUDGE} ${_workers})
  endif()
  add_custom_command(
    OUTPUT ${_script}
    COMMAND $<TARGET_FILE:${target}> --emit-ctest=${_script} --emit-exe=$<TARGET_FILE:${target}>
            --scenarios=${ATTNGATE_SCENARIO_DIR} --results-dir=${results_dir} ${_gate_args}
    DEPENDS ${target} ${_gate_deps} ${_suites}
    COMMENT "Generating CTest tests of ${target} from the scenario suites"
    VERBATIM)
  add_custom_target(${target}_ctest ALL DEPENDS ${_script})
  # An unbuilt tree gets one failing test saying so, instead of silently running nothing.
  set(_include ${CMAKE_CURRENT_BINARY_DIR}/${stem}_include.cmake)
  file(WRITE ${_include}
    "if(EXISTS \"${_script}\")\n  include(\"${_script}\")\nelse()\n"
    "  add_test(${stem}.NOT_BUILT \"${CMAKE_COMMAND}\" -E echo \"${target} is not built: build first\")\n"
    "  set_tests_properties(${stem}.NOT_BUILT PROPERTIES WILL_FAIL TRUE)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_include})

  if(arg_GATE_BENCH AND arg_GATE_TOOL)
    # CPU check of the emitted gate tests, as CTest sees them (names, labels, DEPENDS, RUN_SERIAL),
    # and of the emitter on a suite that names its own kernel and baseline.
    add_test(NAME unit.gate.ctest_script
      COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR}
              -DEMITTER=$<TARGET_FILE:${target}> -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/gate_script_check
              -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_gate_tests.cmake)
    set_tests_properties(unit.gate.ctest_script PROPERTIES LABELS unit TIMEOUT 120)
  endif()
endfunction()
