# cmake -DCHECK=<check_layering.cmake> -DWORK=<scratch dir> -P test_check_layering.cmake
# unit.structure.layering_catches: the layering check must name every planted violation of a
# scratch tree, and pass the same tree once they are removed (a check that lists nothing fails).
cmake_minimum_required(VERSION 3.20)
if(NOT CHECK OR NOT WORK)
  message(FATAL_ERROR "usage: cmake -DCHECK=<check_layering.cmake> -DWORK=<scratch dir> -P test_check_layering.cmake")
endif()
file(REMOVE_RECURSE ${WORK})
set(clean
  "kernels/api/include/attngate/params.hpp|// params"
  "kernels/initial/initial.cu|#include \"attngate/params.hpp\"\n#include <attngate/params.hpp>\n#include \"../api/include/attngate/params.hpp\""
  "kernels/initial/CMakeLists.txt|target_link_libraries(k PRIVATE attngate::kernel_api)  # not attngate_verify_core"
  "verify/CMakeLists.txt|add_library(attngate_verify_core STATIC core.cpp)"
  "bench/CMakeLists.txt|add_library(attngate_comparison_document INTERFACE)\nadd_library(attngate::comparison_document ALIAS attngate_comparison_document)"
  "agent_hooks/gate/src/verdict.cpp|#include \"attngate/gate/report.hpp\""
  "scenarios/include/attngate/scenario.hpp|#include \"attngate/params.hpp\""
  "reference/src/reference.cu|// the fp32 reference, registered by verify"
  "verify/src/main.cpp|#include \"attngate/scenario.hpp\"")
# Each: file|text|what the check must print about it (no ";" in the text: it splits the list).
set(planted
  "kernels/a/angle.cpp|#include <attngate/scenario.hpp>|kernels/a/angle.cpp: #include attngate/scenario.hpp"
  "kernels/a/up.cpp|#include \"../../bench/include/x.hpp\"|kernels/a/up.cpp: #include ../../bench/include/x.hpp (leaves kernels/)"
  "kernels/a/CMakeLists.txt|target_link_libraries(a PRIVATE attngate_verify_core)|kernels/a/CMakeLists.txt: target_link_libraries(a PRIVATE attngate_verify_core)"
  "kernels/b/CMakeLists.txt|target_sources(b PRIVATE \${CMAKE_CURRENT_SOURCE_DIR}/../../bench/src/x.cpp)|kernels/b/CMakeLists.txt: target_sources"
  "scenarios/src/load.cpp|#include \"attngate/registry.hpp\"|scenarios/src/load.cpp: #include attngate/registry.hpp"
  "reference/src/registers.cpp|ATTNGATE_REGISTER_KERNEL(\"ref\", \"d\", {}, {}, 80, nullptr)|reference/src/registers.cpp: ATTNGATE_REGISTER_KERNEL"
  "verify/src/gate.cpp|#include \"attngate/gate/report.hpp\"|verify/src/gate.cpp: #include \"attngate/gate/report.hpp\""
  "kernels/a/nospace.cc|#include\"attngate/scenario.hpp\"|kernels/a/nospace.cc: #include attngate/scenario.hpp"
  "kernels/c/CMakeLists.txt|target_link_libraries(c PRIVATE attngate::comparison_document)|kernels/c/CMakeLists.txt: target_link_libraries(c PRIVATE attngate::comparison_document) (attngate::comparison_document is another folder's target)"
  "kernels/CMakeLists.txt|add_subdirectory(../bench bench)|kernels/CMakeLists.txt: add_subdirectory(../bench bench) (a path or command of another folder)"
  "agent_hooks/gate/src/lineage_user.cpp|#include <attngate/hooks/lineage.hpp>|agent_hooks/gate/src/lineage_user.cpp: #include <attngate/hooks/lineage.hpp>"
  "reference/src/adds.cpp|static const int added = (attngate::KernelRegistry::instance().add({}), 0)|reference/src/adds.cpp: static const int added")
function(write_entries entries)
  foreach(e IN LISTS entries)
    string(REPLACE "|" ";" parts "${e}")
    list(GET parts 0 f)
    list(GET parts 1 text)
    file(WRITE ${WORK}/${f} "${text}\n")
  endforeach()
endfunction()
function(run_check out_var rc_var)
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK} -P ${CHECK} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

write_entries("${clean}")
run_check(out rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the clean scratch tree failed the layering check:\n${out}")
endif()
write_entries("${planted}")
run_check(out rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "the layering check passed a tree with every planted violation:\n${out}")
endif()
set(missed "")
foreach(e IN LISTS planted)
  string(REPLACE "|" ";" parts "${e}")
  list(GET parts 2 expect)
  string(FIND "${out}" "${expect}" at)
  if(at EQUAL -1)
    string(APPEND missed "\n  ${expect}")
  endif()
endforeach()
if(missed)
  message(FATAL_ERROR "the layering check did not name:${missed}\nits output:\n${out}")
endif()
list(LENGTH planted n)
message(STATUS "layering check: all ${n} planted violations named; the clean tree passes")
file(REMOVE_RECURSE ${WORK})
