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
