# What kernels/worker checks of a kernel's source folder, so that the tree hash a worker embeds
# describes what was built (kernels/worker/CMakeLists.txt, candidate_tree_hash.cmake).
#
# attngate_cmake_files_sha256(<out> <dir>): the SHA-256 over "<sha256>  <path>\n" of every CMake
# file (CMakeLists.txt, *.cmake) below <dir>, sorted by path. kernels/worker takes it when CMake
# reads a kernel folder, and candidate_tree_hash.cmake again at build time: a difference means a
# CMake file changed without its time moving (tar, rsync -a, cp -p), so CMake did not read it again.
function(attngate_cmake_files_sha256 out dir)
  file(GLOB_RECURSE files LIST_DIRECTORIES false "${dir}/*")
  list(SORT files COMPARE STRING)
  set(listing "")
  foreach(f IN LISTS files)
    if(f MATCHES "(/CMakeLists\\.txt|\\.cmake)$" AND EXISTS "${f}" AND NOT IS_DIRECTORY "${f}")
      file(SHA256 "${f}" f_sha)
      string(APPEND listing "${f_sha}  ${f}\n")
    endif()
  endforeach()
  string(SHA256 sha "${listing}")
  set(${out} ${sha} PARENT_SCOPE)
endfunction()

# attngate_sources_outside(<out> <dir> <sources>): the sources (absolute, or relative to <dir>) that
# do not lie inside <dir> once symlinks are resolved, and every source given by a generator
# expression (which cannot be checked before the build). A worker's tree hash covers its folder
# only, so a kernel library that compiled a file from elsewhere would be judged as a folder it is
# not: kernels/worker refuses it (unit.structure.kernel_sources tests this function). Headers
# listed as sources are not compiled and are passed over (a build-generated one is legitimate);
# what a source includes is not checked here (agent_hooks/SECURITY.md).
function(attngate_sources_outside out dir sources)
  file(REAL_PATH "${dir}" root)
  set(outside "")
  foreach(src IN LISTS sources)
    if(src MATCHES "\\$<")
      list(APPEND outside "${src}")
      continue()
    endif()
    if(src MATCHES "\\.(h|hh|hpp|hxx|cuh|inc)$")
      continue()
    endif()
    file(REAL_PATH "${src}" real BASE_DIRECTORY "${dir}")
    cmake_path(IS_PREFIX root "${real}" NORMALIZE inside)
    if(NOT inside)
      list(APPEND outside "${src}")
    endif()
  endforeach()
  set(${out} "${outside}" PARENT_SCOPE)
endfunction()
