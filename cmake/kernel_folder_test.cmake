# unit.structure.kernel_sources: attngate_sources_outside (kernel_folder.cmake) on a scratch folder.
#   cmake -DWORK=<scratch dir> -P kernel_folder_test.cmake
# The attack it stands for: a candidate whose CMakeLists.txt compiles a file from outside its folder,
# which the tree hash (and so the gate's CANDIDATE_CHANGED and the commit's tree) would not cover.
cmake_minimum_required(VERSION 3.20)
include(${CMAKE_CURRENT_LIST_DIR}/kernel_folder.cmake)
if(NOT DEFINED WORK)
  message(FATAL_ERROR "usage: cmake -DWORK=<scratch dir> -P kernel_folder_test.cmake")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/k/sub" "${WORK}/elsewhere")
file(WRITE "${WORK}/k/a.cu" "")
file(WRITE "${WORK}/k/sub/b.cu" "")
file(WRITE "${WORK}/elsewhere/x.cu" "")
file(CREATE_LINK "${WORK}/elsewhere/x.cu" "${WORK}/k/link.cu" SYMBOLIC)
file(CREATE_LINK "${WORK}/elsewhere" "${WORK}/k/linked_dir" SYMBOLIC)

function(expect sources want)
  attngate_sources_outside(got "${WORK}/k" "${sources}")
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "sources [${sources}]: outside [${got}], expected [${want}]")
  endif()
endfunction()
expect("a.cu;sub/b.cu;${WORK}/k/a.cu" "")                                  # inside, relative and absolute
expect("a.cu;../elsewhere/x.cu" "../elsewhere/x.cu")                        # a relative way out
expect("${WORK}/elsewhere/x.cu" "${WORK}/elsewhere/x.cu")                   # an absolute one
expect("sub/../../elsewhere/x.cu" "sub/../../elsewhere/x.cu")               # through a subfolder
expect("link.cu" "link.cu")                                                # a symlinked file
expect("linked_dir/x.cu" "linked_dir/x.cu")                                # a symlinked folder
expect("$<1:${WORK}/elsewhere/x.cu>" "$<1:${WORK}/elsewhere/x.cu>")        # hidden in a generator expression
file(MAKE_DIRECTORY "${WORK}/kk")
file(WRITE "${WORK}/kk/c.cu" "")
expect("../kk/c.cu" "../kk/c.cu")                                          # a sibling sharing the name's prefix
expect("${WORK}/elsewhere/gen.h;a.cu" "")                                  # a header is not compiled
expect("${WORK}/elsewhere/x.o" "${WORK}/elsewhere/x.o")                     # an object to link is
message(STATUS "kernel_folder_test: all cases as expected")
