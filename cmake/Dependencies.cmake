# Every dependency is found on the system first; the pinned FetchContent fallback serves machines
# that lack it (it needs network, so offline GPU runners install the packages instead: README.md).
# The fallbacks are pinned by release tag; GitHub is not reachable from the development machines,
# so their archive hashes could not be recorded here.
include(FetchContent)

# Packages unpacked into .carry/root for an offline runner (README.md, "On a GPU machine without
# network") are found without -DCMAKE_PREFIX_PATH: ci/install-deps.sh counts them as installed, so
# its `install-deps && cmake --preset ...` would otherwise fail on a machine that has them only there.
if(EXISTS "${PROJECT_SOURCE_DIR}/.carry/root/usr")
  list(APPEND CMAKE_PREFIX_PATH "${PROJECT_SOURCE_DIR}/.carry/root/usr")
  message(STATUS "attngate: packages are also looked up in ${PROJECT_SOURCE_DIR}/.carry/root/usr "
                 "(found there before the system's; remove the folder to use only the system's)")
endif()

find_package(CUDAToolkit 12.4 REQUIRED)
if(NOT TARGET CUDA::cupti)
  message(FATAL_ERROR "CUPTI was not found with the CUDA Toolkit at ${CUDAToolkit_LIBRARY_ROOT}")
endif()

# SHA-256 and HMAC for agent_hooks (version names, gate receipts): OpenSSL's libcrypto, no fallback.
find_package(OpenSSL 3.0 COMPONENTS Crypto)
if(NOT OpenSSL_FOUND)
  message(FATAL_ERROR "OpenSSL 3 (libcrypto) was not found: install libssl-dev (ci/install-deps.sh), or "
                      "unpack it under a prefix named in CMAKE_PREFIX_PATH (README.md, 'On a GPU machine without network')")
endif()
# Debian and Ubuntu keep opensslconf.h under include/<multiarch>/, which the compiler searches only
# below /usr: a package unpacked elsewhere needs that folder too.
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS "${OPENSSL_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}/openssl/opensslconf.h")
  set_property(TARGET OpenSSL::Crypto APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES
               "${OPENSSL_INCLUDE_DIR}/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

# Text formatting ({fmt}, header only as used here; libfmt-dev). No fallback.
find_package(fmt 9 CONFIG)
if(NOT fmt_FOUND)
  message(FATAL_ERROR "{fmt} 9 was not found: install libfmt-dev (ci/install-deps.sh), or unpack it (with libfmt9) "
                      "under a prefix named in CMAKE_PREFIX_PATH (README.md, 'On a GPU machine without network')")
endif()

# JSON Schema validation of the documents that cross process boundaries: valijson (header only; no
# CMake package of its own; libvalijson-dev).
find_path(ATTNGATE_VALIJSON_INCLUDE_DIR valijson/validator.hpp)
if(NOT ATTNGATE_VALIJSON_INCLUDE_DIR)
  message(FATAL_ERROR "valijson was not found: install libvalijson-dev (ci/install-deps.sh), or unpack it under a "
                      "prefix named in CMAKE_PREFIX_PATH (README.md, 'On a GPU machine without network')")
endif()
add_library(attngate_valijson INTERFACE)
add_library(attngate::valijson ALIAS attngate_valijson)
target_include_directories(attngate_valijson SYSTEM INTERFACE ${ATTNGATE_VALIJSON_INCLUDE_DIR})

FetchContent_Declare(GTest
  URL https://github.com/google/googletest/archive/refs/tags/release-1.12.1.tar.gz
  FIND_PACKAGE_ARGS 1.12 NAMES GTest)
FetchContent_Declare(benchmark
  URL https://github.com/google/benchmark/archive/refs/tags/v1.7.1.tar.gz
  FIND_PACKAGE_ARGS 1.7)
FetchContent_Declare(Eigen3
  URL https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz
  FIND_PACKAGE_ARGS 3.3 NO_MODULE)
FetchContent_Declare(yaml-cpp
  URL https://github.com/jbeder/yaml-cpp/archive/refs/tags/0.8.0.tar.gz
  FIND_PACKAGE_ARGS 0.7)

FetchContent_Declare(nlohmann_json
  URL https://github.com/nlohmann/json/releases/download/v3.11.3/json.tar.xz
  FIND_PACKAGE_ARGS 3.10)
# Every binary's flags (attngate, attngate_verify, attngate_bench, attngate_adversarial,
# attngate_scenarios). 2.1 is the oldest release the code is written against (Debian 12 ships 2.1.2).
FetchContent_Declare(CLI11
  URL https://github.com/CLIUtils/CLI11/archive/refs/tags/v2.4.2.tar.gz
  FIND_PACKAGE_ARGS 2.1)

set(JSON_BuildTests OFF CACHE BOOL "" FORCE)
set(BENCHMARK_ENABLE_TESTING OFF CACHE BOOL "" FORCE)
set(BENCHMARK_ENABLE_GTEST_TESTS OFF CACHE BOOL "" FORCE)
set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
set(YAML_CPP_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(YAML_CPP_BUILD_TOOLS OFF CACHE BOOL "" FORCE)
set(EIGEN_BUILD_DOC OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_DOCS OFF CACHE BOOL "" FORCE)
set(BUILD_TESTING OFF CACHE BOOL "" FORCE)
FetchContent_MakeAvailable(GTest benchmark Eigen3 yaml-cpp nlohmann_json CLI11)

# yaml-cpp spells its target differently across versions (0.7: yaml-cpp, 0.8: yaml-cpp::yaml-cpp).
if(NOT TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp::yaml-cpp ALIAS yaml-cpp)
endif()
if(NOT TARGET GTest::gtest_main)
  add_library(GTest::gtest_main ALIAS gtest_main)
  add_library(GTest::gtest ALIAS gtest)
endif()
