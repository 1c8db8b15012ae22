#!/usr/bin/env bash
# Installs what attngate needs from Debian/Ubuntu packages, skipping what is already there (as a
# package or as a CMake package config, so GPU runners with no network and hand-built libraries
# pass). The CUDA toolkit (nvcc, CUPTI) is not installed here: it must be at /usr/local/cuda.
set -euo pipefail

prefixes=(/usr /usr/local)
have_config() {  # $1: glob under <prefix>/ of a CMake package config
  local p f
  for p in "${prefixes[@]}"; do
    for f in $p/$1; do [[ -e $f ]] && return 0; done
  done
  return 1
}
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

need=()
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
have_pkg libgtest-dev || have_config 'lib*/cmake/GTest/GTestConfig.cmake' ||
  have_config 'lib/*/cmake/GTest/GTestConfig.cmake' || need+=(libgtest-dev)
have_pkg libbenchmark-dev || have_config 'lib*/cmake/benchmark/benchmarkConfig.cmake' ||
  have_config 'lib/*/cmake/benchmark/benchmarkConfig.cmake' || need+=(libbenchmark-dev)
have_pkg libeigen3-dev || have_config 'share/eigen3/cmake/Eigen3Config.cmake' ||
  have_config 'lib*/cmake/eigen3/Eigen3Config.cmake' || need+=(libeigen3-dev)
have_pkg libyaml-cpp-dev || have_config 'lib*/cmake/yaml-cpp/yaml-cpp-config.cmake' ||
  have_config 'lib/*/cmake/yaml-cpp/yaml-cpp-config.cmake' || have_config 'share/cmake/yaml-cpp/yaml-cpp-config.cmake' ||
  need+=(libyaml-cpp-dev)
have_pkg nlohmann-json3-dev || have_config 'share/cmake/nlohmann_json/nlohmann_jsonConfig.cmake' ||
  have_config 'lib*/cmake/nlohmann_json/nlohmann_jsonConfig.cmake' || need+=(nlohmann-json3-dev)
have_pkg libcli11-dev || have_config 'share/cmake/CLI11/CLI11Config.cmake' ||
  have_config 'lib*/cmake/CLI11/CLI11Config.cmake' || have_config 'lib/*/cmake/CLI11/CLI11Config.cmake' ||
  need+=(libcli11-dev)

have_pkg libssl-dev || [[ -e /usr/include/openssl/evp.h || -e /usr/local/include/openssl/evp.h ]] ||
  [[ -e $(dirname "$0")/../.carry/root/usr/include/openssl/evp.h ]] || need+=(libssl-dev)  # SHA-256, HMAC (agent_hooks)
have_pkg libfmt-dev || have_config 'lib*/cmake/fmt/fmt-config.cmake' || have_config 'lib/*/cmake/fmt/fmt-config.cmake' ||
  [[ -e $(dirname "$0")/../.carry/root/usr/lib/x86_64-linux-gnu/cmake/fmt/fmt-config.cmake ]] || need+=(libfmt-dev)  # {fmt}
have_pkg libvalijson-dev || [[ -e /usr/include/valijson/validator.hpp || -e /usr/local/include/valijson/validator.hpp ]] ||
  [[ -e $(dirname "$0")/../.carry/root/usr/include/valijson/validator.hpp ]] || need+=(libvalijson-dev)  # JSON Schema
command -v python3 >/dev/null || need+=(python3)  # ci/verify.sh's verdict (ci/verify_summary.py), the ci/ tests
python3 -c 'import jsonschema' 2>/dev/null || have_pkg python3-jsonschema || need+=(python3-jsonschema)  # the Python tools' schema checks
# Optional: ci/verify_summary.py reads gate.yaml with PyYAML when it can (else its one key by hand).
want=()
python3 -c 'import yaml' 2>/dev/null || have_pkg python3-yaml || want+=(python3-yaml)
# Optional: libseccomp-dev (seccomp.h, the static libseccomp.a) for attngate_sandbox's filter; without
# it the launcher is built without seccomp and reports SANDBOX_UNAVAILABLE: seccomp (kernels/worker/README.md).
have_pkg libseccomp-dev || [[ -e /usr/include/seccomp.h || -e /usr/local/include/seccomp.h ]] ||
  [[ -e $(dirname "$0")/../.carry/root/usr/include/seccomp.h ]] || want+=(libseccomp-dev)

if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "attngate: missing packages: ${need[*]} (run this script as root, or install them)" >&2
    exit 1
  fi
  echo "attngate: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Optional packages apart, so one that cannot be installed (no network, not in the release) stops nothing.
if ((${#want[@]})); then
  if [[ $(id -u) -eq 0 ]]; then
    echo "attngate: installing ${want[*]} (optional)"
    ((${#need[@]})) || apt-get update -qq || true
    for p in "${want[@]}"; do
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" >/dev/null ||
        echo "attngate: could not install $p (optional; going on without it)" >&2
    done
  else
    echo "attngate: optional package missing: ${want[*]} (not root; going on without it)" >&2
  fi
fi
if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "attngate: no CUDA toolkit at /usr/local/cuda (nvcc is needed to build the kernels)" >&2
  exit 1
fi
