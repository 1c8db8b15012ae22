# cmake -DROOT=<source dir> -P check_layering.cmake
# The dependency rules of the layout (README.md: kernels/ at the bottom): fails, naming the file and
# the line, when one comes back.
#  - kernels/ includes only the headers of kernels/ (its api/ and worker/ folders), and its
#    CMakeLists name no other top-level folder;
#  - scenarios/ uses only its own headers and the params header of kernels/ (attngate/params.hpp);
#  - agent_hooks/gate/ includes no header of the rest of agent_hooks/ (attngate/hooks/...);
#  - verify/ names no command, header or library of agent_hooks/;
#  - reference/ registers no kernel (the `reference` kernel is verify's).
# Includes are read in both spellings ("attngate/x" and <attngate/x>), and a relative include
# ("../...") may not leave its top-level folder. No exceptions.
# cmake/test_check_layering.cmake plants one of each violation in a scratch tree and checks that
# every one is named (unit.structure.layering_catches).
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source dir> -P check_layering.cmake")
endif()
set(problems "")

file(GLOB kernel_headers RELATIVE ${ROOT} ${ROOT}/kernels/*/include/attngate/* ${ROOT}/kernels/*/include/attngate/*/*)
set(kernel_includes "")
foreach(h IN LISTS kernel_headers)
  string(REGEX REPLACE "^kernels/[^/]+/include/" "" rel "${h}")
  list(APPEND kernel_includes "${rel}")
endforeach()

function(scan_includes folder allowed_var exception)
  file(GLOB_RECURSE sources RELATIVE ${ROOT} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.hpp ${ROOT}/${folder}/*.cuh
       ${ROOT}/${folder}/*.cu ${ROOT}/${folder}/*.cpp)
  foreach(src IN LISTS sources)
    if(exception AND src MATCHES "${exception}")
      continue()
    endif()
    file(STRINGS ${ROOT}/${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]+[\"<]")
    get_filename_component(src_dir "${ROOT}/${src}" DIRECTORY)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+[\"<]([^\">]+)[\">].*$" "\\1" inc "${line}")
      if(inc MATCHES "^attngate/")
        if(NOT inc IN_LIST ${allowed_var})
          set(problems "${problems}\n  ${src}: #include ${inc} (not allowed in ${folder}/)")
        endif()
      elseif(inc MATCHES "(^|/)\\.\\./")
        get_filename_component(target "${src_dir}/${inc}" ABSOLUTE)
        string(FIND "${target}/" "${ROOT}/${folder}/" at)
        if(NOT at EQUAL 0)
          set(problems "${problems}\n  ${src}: #include ${inc} (leaves ${folder}/)")
        endif()
      endif()
    endforeach()
  endforeach()
  set(problems "${problems}" PARENT_SCOPE)
endfunction()

scan_includes(kernels kernel_includes "")
file(GLOB scenario_headers RELATIVE ${ROOT}/scenarios/include ${ROOT}/scenarios/include/attngate/*)
set(scenarios_allowed "attngate/params.hpp" ${scenario_headers})
scan_includes(scenarios scenarios_allowed "")

# agent_hooks/gate/ (the verdict) uses nothing of the agent side around it: the lineage, the
# supervisor, the questions, the receipt and the commands are agent_hooks/'s own headers.
file(GLOB_RECURSE gate_sources RELATIVE ${ROOT} ${ROOT}/agent_hooks/gate/*.hpp ${ROOT}/agent_hooks/gate/*.cpp)
foreach(src IN LISTS gate_sources)
  file(STRINGS ${ROOT}/${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]+\"attngate/hooks/")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${src}: ${line} (agent_hooks/gate/ must not use agent_hooks/'s own headers)")
  endforeach()
endforeach()

file(GLOB_RECURSE kernel_cmake RELATIVE ${ROOT} ${ROOT}/kernels/CMakeLists.txt ${ROOT}/kernels/*/CMakeLists.txt
     ${ROOT}/kernels/*.cmake)
foreach(f IN LISTS kernel_cmake)
  file(STRINGS ${ROOT}/${f} lines REGEX "(PROJECT|CMAKE)_SOURCE_DIR}/(bench|verify|reference|scenarios|agent_hooks)/|\\.\\./\\.\\./(bench|verify|reference|scenarios|agent_hooks)|attngate::(bench|verify|scenarios|reference|hooks|gate)|attngate_(verify|bench|hooks|gate|scenarios|reference)[a-z_]*")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#")
      continue()
    endif()
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${f}: ${line}")
  endforeach()
endforeach()

# scenarios/ links no kernel and no judge (its tool lists suites; attngate_kernels lists kernels).
file(GLOB_RECURSE scenario_cmake RELATIVE ${ROOT} ${ROOT}/scenarios/CMakeLists.txt ${ROOT}/scenarios/*/CMakeLists.txt)
foreach(f IN LISTS scenario_cmake)
  file(STRINGS ${ROOT}/${f} lines REGEX "attngate::(kernels|verify|bench|reference|hooks|gate)")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^[ \t]*#")
      string(STRIP "${line}" line)
      set(problems "${problems}\n  ${f}: ${line}")
    endif()
  endforeach()
endforeach()

# verify/ names no command or library of agent_hooks (the gate's own tests are agent_hooks/gate's).
file(GLOB_RECURSE verify_files RELATIVE ${ROOT} ${ROOT}/verify/*.cpp ${ROOT}/verify/*.hpp ${ROOT}/verify/*.cu
     ${ROOT}/verify/*.cmake ${ROOT}/verify/CMakeLists.txt)
foreach(f IN LISTS verify_files)
  file(STRINGS ${ROOT}/${f} lines REGEX "attngate/(hooks|gate)/|attngate::(hooks|gate)|TARGET_FILE:attngate>|GATE_TOOL|emit-attngate|\"--prepare\"")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${f}: ${line} (verify/ must not name agent_hooks' command or code)")
  endforeach()
endforeach()

# reference/ registers nothing: the fp32 reference is a library, and verify registers the kernel
# that runs it (verify/src/reference_kernel.cpp).
file(GLOB_RECURSE reference_sources RELATIVE ${ROOT} ${ROOT}/reference/*.cpp ${ROOT}/reference/*.cu
     ${ROOT}/reference/*.hpp ${ROOT}/reference/*.cuh)
foreach(src IN LISTS reference_sources)
  file(STRINGS ${ROOT}/${src} lines REGEX "ATTNGATE_REGISTER_KERNEL|KernelRegistrar")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${src}: ${line} (reference/ registers no kernel)")
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "layering: a folder reaches up or sideways (README.md, issue 21):${problems}")
endif()
message(STATUS "layering: kernels/ includes only its own headers; scenarios/ only its own and attngate/params.hpp; agent_hooks/gate/ none of agent_hooks/; reference/ registers nothing")
