# libseccomp for attngate_sandbox (kernels/worker). The static library is preferred, so the
# launcher runs where only the runtime package is installed (Ubuntu 24.04's libseccomp2 has no
# header); CMAKE_PREFIX_PATH is honoured (.carry/root/usr: README.md). Without the header the
# launcher is still built, and reports seccomp unavailable at run time (its --policy decides).
# ATTNGATE_SECCOMP=OFF builds it without libseccomp even where it is installed.
set(ATTNGATE_SECCOMP AUTO CACHE STRING "AUTO: the sandbox's seccomp filter when libseccomp is found; OFF: none")
set_property(CACHE ATTNGATE_SECCOMP PROPERTY STRINGS AUTO OFF)
if(NOT ATTNGATE_SECCOMP STREQUAL "OFF")
  find_path(ATTNGATE_SECCOMP_INCLUDE_DIR seccomp.h)
  find_library(ATTNGATE_SECCOMP_LIBRARY NAMES libseccomp.a seccomp)
endif()
if(NOT ATTNGATE_SECCOMP STREQUAL "OFF" AND ATTNGATE_SECCOMP_INCLUDE_DIR AND ATTNGATE_SECCOMP_LIBRARY)
  add_library(attngate_seccomp INTERFACE IMPORTED)
  target_include_directories(attngate_seccomp INTERFACE ${ATTNGATE_SECCOMP_INCLUDE_DIR})
  target_link_libraries(attngate_seccomp INTERFACE ${ATTNGATE_SECCOMP_LIBRARY})
  if(ATTNGATE_SECCOMP_LIBRARY MATCHES "\\.a$")
    set(ATTNGATE_SECCOMP_STATIC 1)
  else()
    set(ATTNGATE_SECCOMP_STATIC 0)
  endif()
  message(STATUS "attngate: seccomp: ${ATTNGATE_SECCOMP_LIBRARY}")
else()
  message(STATUS "attngate: seccomp: off (ATTNGATE_SECCOMP=${ATTNGATE_SECCOMP}; seccomp.h and libseccomp: "
                 "install libseccomp-dev): attngate_sandbox will report SANDBOX_UNAVAILABLE: seccomp")
endif()
