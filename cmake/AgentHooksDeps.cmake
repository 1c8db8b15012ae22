# agent_hooks/ needs a JSON library and a command-line parser. As in Dependencies.cmake, the system
# packages come first (Debian: nlohmann-json3-dev, libcli11-dev) and a pinned FetchContent fallback
# serves machines without them (it needs network; offline GPU runners install the packages).
# Dependencies.cmake, included first by the top-level CMakeLists.txt, already declares and finds
# both (every binary parses its flags with CLI11), so in the full build these declarations are
# no-ops (the first declaration of a name wins); they stay so that the pins agree.
include_guard(GLOBAL)
include(FetchContent)

FetchContent_Declare(nlohmann_json
  URL https://github.com/nlohmann/json/releases/download/v3.11.3/json.tar.xz
  FIND_PACKAGE_ARGS 3.10)
# 2.1 is the oldest release the code is written against (Debian 12 ships 2.1.2).
FetchContent_Declare(CLI11
  URL https://github.com/CLIUtils/CLI11/archive/refs/tags/v2.4.2.tar.gz
  FIND_PACKAGE_ARGS 2.1)

set(JSON_BuildTests OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
set(CLI11_BUILD_DOCS OFF CACHE BOOL "" FORCE)
FetchContent_MakeAvailable(nlohmann_json CLI11)
