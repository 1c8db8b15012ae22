# Tests generated from registry x scenarios. The test binary writes its own CTest script after each
# build (and whenever a suite file changes), so names and labels follow the YAML suites.
include(GoogleTest)

# Each test writes its JSON outcome into results_dir (read by the gate).
function(attngate_generated_tests target stem results_dir)
  file(GLOB _suites CONFIGURE_DEPENDS ${ATTNGATE_SCENARIO_DIR}/*.yaml)
  set(_script ${CMAKE_CURRENT_BINARY_DIR}/${stem}.cmake)
  add_custom_command(
    OUTPUT ${_script}
    COMMAND $<TARGET_FILE:${target}> --emit-ctest=${_script} --emit-exe=$<TARGET_FILE:${target}>
            --scenarios=${ATTNGATE_SCENARIO_DIR} --results-dir=${results_dir}
    DEPENDS ${target} ${_suites}
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
