# Tests generated from registry x scenarios. The test binary writes its own CTest script after each
# build (and whenever a suite file changes), so names and labels follow the YAML suites.
include(GoogleTest)

# Each test writes its JSON outcome into results_dir (read by the gate).
#   attngate_generated_tests(<target> <stem> <results_dir> [GATE_JUDGE <target>])
# With GATE_JUDGE (attngate_verify_judge), the kernels running in the workers of
# ATTNGATE_WORKERS_DIR, the script also holds the gate's verify tests and gate.device when the suites
# include `gate`, and the list of the gate's verify tests goes to ATTNGATE_GATE_BATCHES, from which
# attngate_gate_tests() (below) writes the gate's own tests.
function(attngate_generated_tests target stem results_dir)
  cmake_parse_arguments(PARSE_ARGV 3 arg "" "GATE_JUDGE" "")
  file(GLOB _suites CONFIGURE_DEPENDS ${ATTNGATE_SCENARIO_DIR}/*.yaml)
  set(_script ${CMAKE_CURRENT_BINARY_DIR}/${stem}.cmake)
  set(_gate_args)
  set(_gate_deps)
  set(_outputs ${_script})
  if(arg_GATE_JUDGE)
    get_property(_workers GLOBAL PROPERTY ATTNGATE_WORKERS)
    list(TRANSFORM _workers REPLACE "^attngate_worker_" "" OUTPUT_VARIABLE _worker_libs)
    list(JOIN _worker_libs "," _worker_libs)
    set(_batches ${CMAKE_CURRENT_BINARY_DIR}/${stem}.gate_batches.json)
    set(ATTNGATE_GATE_BATCHES ${_batches} CACHE INTERNAL "the gate's verify tests, as verify emitted them")
    set(_gate_args --emit-worker-libs=${_worker_libs} --emit-judge=$<TARGET_FILE:${arg_GATE_JUDGE}>
                   --emit-workers=${ATTNGATE_WORKERS_DIR} --emit-gate-batches=${_batches})
    set(_gate_deps ${arg_GATE_JUDGE} ${_workers})
    list(APPEND _outputs ${_batches})
  endif()
  add_custom_command(
    OUTPUT ${_outputs}
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

endfunction()

# The gate's own tests (gate.setup, gate.performance, gate.report: agent_hooks/gate/plan.hpp),
# written by `attngate plan` from the list of the gate's verify tests (ATTNGATE_GATE_BATCHES).
#   attngate_gate_tests(TOOL <attngate target> BENCH <attngate_bench_judge target> VERIFY <target>)
function(attngate_gate_tests)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "TOOL;BENCH;VERIFY" "")
  set(_script ${CMAKE_CURRENT_BINARY_DIR}/gate_tests.cmake)
  add_custom_command(
    OUTPUT ${_script}
    COMMAND $<TARGET_FILE:${arg_TOOL}> plan --batches=${ATTNGATE_GATE_BATCHES} --out=${_script}
            --attngate=$<TARGET_FILE:${arg_TOOL}> --bench=$<TARGET_FILE:${arg_BENCH}> --workers=${ATTNGATE_WORKERS_DIR}
            --gate-build-dir=${CMAKE_BINARY_DIR} --source-dir=${CMAKE_SOURCE_DIR}
    DEPENDS ${arg_TOOL} ${arg_BENCH} ${ATTNGATE_GATE_BATCHES}
    COMMENT "Generating the gate's CTest tests"
    VERBATIM)
  add_custom_target(attngate_gate_ctest ALL DEPENDS ${_script})
  add_dependencies(attngate_gate_ctest ${arg_VERIFY}_ctest)  # the list is written with verify's script
  set(_include ${CMAKE_CURRENT_BINARY_DIR}/gate_tests_include.cmake)
  file(WRITE ${_include}
    "if(EXISTS \"${_script}\")\n  include(\"${_script}\")\nelse()\n"
    "  add_test(gate.NOT_BUILT \"${CMAKE_COMMAND}\" -E echo \"the gate's tests are not generated: build first\")\n"
    "  set_tests_properties(gate.NOT_BUILT PROPERTIES WILL_FAIL TRUE LABELS gate)\nendif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${_include})
  # CPU check of the gate's tests as CTest sees them (names, labels, DEPENDS, RUN_SERIAL), and of
  # both writers on a suite that names its own kernel and baseline.
  add_test(NAME unit.gate.ctest_script
    COMMAND ${CMAKE_COMMAND} -DCTEST=${CMAKE_CTEST_COMMAND} -DBUILD_DIR=${CMAKE_BINARY_DIR}
            -DEMITTER=$<TARGET_FILE:${arg_VERIFY}> -DPLANNER=$<TARGET_FILE:${arg_TOOL}>
            -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/gate_script_check
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/check_gate_tests.cmake)
  set_tests_properties(unit.gate.ctest_script PROPERTIES LABELS unit TIMEOUT 120)
endfunction()
