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
get_filename_component(ROOT "${ROOT}" ABSOLUTE)  # no trailing slash, no "..": paths compare as prefixes
set(problems "")
set(source_globs *.h *.hpp *.cuh *.inl *.c *.cc *.cxx *.cpp *.cu)
function(glob_sources out folder)
  set(patterns "")
  foreach(g IN LISTS source_globs)
    list(APPEND patterns ${ROOT}/${folder}/${g})
  endforeach()
  file(GLOB_RECURSE found RELATIVE ${ROOT} ${patterns})
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

file(GLOB kernel_headers RELATIVE ${ROOT} ${ROOT}/kernels/*/include/attngate/* ${ROOT}/kernels/*/include/attngate/*/*)
set(kernel_includes "")
foreach(h IN LISTS kernel_headers)
  string(REGEX REPLACE "^kernels/[^/]+/include/" "" rel "${h}")
  list(APPEND kernel_includes "${rel}")
endforeach()

function(scan_includes folder allowed_var exception)
  glob_sources(sources ${folder})
  if(NOT sources)
    set(problems "${problems}\n  ${folder}/: no sources found under ${ROOT} (a wrong ROOT checks nothing)" PARENT_SCOPE)
    return()
  endif()
  foreach(src IN LISTS sources)
    if(exception AND src MATCHES "${exception}")
      continue()
    endif()
    file(STRINGS ${ROOT}/${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]")
    get_filename_component(src_dir "${ROOT}/${src}" DIRECTORY)
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]+)[\">].*$" "\\1" inc "${line}")
      if(inc MATCHES "^attngate/")
        if(NOT inc IN_LIST ${allowed_var})
          set(problems "${problems}\n  ${src}: #include ${inc} (not allowed in ${folder}/)")
        endif()
      elseif(inc MATCHES "(^|/)\\.\\./" OR IS_ABSOLUTE "${inc}")
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
glob_sources(gate_sources agent_hooks/gate)
foreach(src IN LISTS gate_sources)
  file(STRINGS ${ROOT}/${src} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]attngate/hooks/")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${src}: ${line} (agent_hooks/gate/ must not use agent_hooks/'s own headers)")
  endforeach()
endforeach()

file(GLOB_RECURSE kernel_cmake RELATIVE ${ROOT} ${ROOT}/kernels/CMakeLists.txt ${ROOT}/kernels/*/CMakeLists.txt
     ${ROOT}/kernels/*.cmake)
# The targets the other folders define (add_library / add_executable, aliases too), by the project's
# names (attngate_*, attngate::*, and the attngate command): kernels/' CMake files name none of them.
set(foreign_targets "")
foreach(folder bench verify reference scenarios agent_hooks ci)
  file(GLOB_RECURSE cm ${ROOT}/${folder}/CMakeLists.txt ${ROOT}/${folder}/*.cmake)
  foreach(f IN LISTS cm)
    file(STRINGS ${f} defs REGEX "add_(library|executable)[ \t]*\\(")
    foreach(d IN LISTS defs)
      foreach(re "add_(library|executable)[ \t]*\\([ \t]*([A-Za-z0-9_:]+)" "ALIAS[ \t]+()([A-Za-z0-9_:]+)")
        if(NOT d MATCHES "${re}")
          continue()
        endif()
        set(name "${CMAKE_MATCH_2}")  # (each MATCHES below resets CMAKE_MATCH_*)
        if(name MATCHES "^attngate(_|::)[A-Za-z0-9]" AND NOT name MATCHES "_$")
          list(APPEND foreign_targets "${name}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES foreign_targets)
foreach(f IN LISTS kernel_cmake)
  file(STRINGS ${ROOT}/${f} lines)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "#.*$" "" code "${line}")  # a comment may name anything
    string(STRIP "${code}" code)
    set(why "")
    if(code MATCHES "(PROJECT|CMAKE|attngate)_SOURCE_DIR}/(bench|verify|reference|scenarios|agent_hooks)/|(^|[^A-Za-z0-9_])(\\.\\./)+(bench|verify|reference|scenarios|agent_hooks)(/|[^A-Za-z0-9_]|$)|TARGET_FILE:attngate>")
      set(why "a path or command of another folder")
    else()
      string(REGEX MATCHALL "attngate(_|::)[A-Za-z0-9_:]+" names "${code}")
      foreach(n IN LISTS names)
        if(n IN_LIST foreign_targets)
          set(why "${n} is another folder's target")
        endif()
      endforeach()
    endif()
    if(why)
      set(problems "${problems}\n  ${f}: ${code} (${why})")
    endif()
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
glob_sources(reference_sources reference)
foreach(src IN LISTS reference_sources)
  file(STRINGS ${ROOT}/${src} lines REGEX "ATTNGATE_REGISTER_KERNEL|KernelRegistrar|KernelRegistry::instance\\(\\)\\.add")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    set(problems "${problems}\n  ${src}: ${line} (reference/ registers no kernel)")
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "layering: a folder reaches up or sideways (README.md, issue 21):${problems}")
endif()
message(STATUS "layering: kernels/ includes only its own headers; scenarios/ only its own and attngate/params.hpp; agent_hooks/gate/ none of agent_hooks/; reference/ registers nothing")
