# Included by kernels/worker/CMakeLists.txt. attngate_sandbox seals itself and execs a worker
# (README.md); its library also holds the judge's side (harden_judge_process, kill_descendants).
# Nothing here links CUDA.
include(Seccomp)
add_library(attngate_sandbox_lib STATIC src/sandbox.cpp src/sandbox_landlock.cpp src/sandbox_seccomp.cpp
                                        src/sandbox_judge.cpp)
add_library(attngate::sandbox ALIAS attngate_sandbox_lib)
target_include_directories(attngate_sandbox_lib PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
if(TARGET attngate_seccomp)
  target_link_libraries(attngate_sandbox_lib PRIVATE attngate_seccomp)
  target_compile_definitions(attngate_sandbox_lib PRIVATE ATTNGATE_HAVE_SECCOMP=1
                                                          ATTNGATE_SECCOMP_STATIC=${ATTNGATE_SECCOMP_STATIC})
endif()

add_executable(attngate_sandbox src/sandbox_main.cpp)
target_link_libraries(attngate_sandbox PRIVATE attngate::sandbox CLI11::CLI11)
# CPU tests: a probe program run through attngate_sandbox attempts what the seal forbids.
find_package(Threads REQUIRED)
add_executable(attngate_sandbox_probe_child tests/sandbox_probe_child.cpp)
target_link_libraries(attngate_sandbox_probe_child PRIVATE Threads::Threads)
add_executable(attngate_sandbox_unit_tests tests/test_sandbox.cpp)
target_link_libraries(attngate_sandbox_unit_tests PRIVATE attngate::sandbox GTest::gtest_main)
target_compile_definitions(attngate_sandbox_unit_tests PRIVATE
  ATTNGATE_SANDBOX_BIN="$<TARGET_FILE:attngate_sandbox>"
  ATTNGATE_SANDBOX_PROBE_CHILD="$<TARGET_FILE:attngate_sandbox_probe_child>")
add_dependencies(attngate_sandbox_unit_tests attngate_sandbox attngate_sandbox_probe_child)
include(GoogleTest)
gtest_discover_tests(attngate_sandbox_unit_tests TEST_PREFIX unit.sandbox. PROPERTIES LABELS unit)
