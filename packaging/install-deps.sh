#!/usr/bin/env bash
# Installs hepd's build and test dependencies from Debian 12 packages. Idempotent: installs only
# what is missing, and runs apt-get update only when something is.
set -euo pipefail

build_pkgs=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev
  libyaml-cpp-dev
  libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libcivetweb-dev
  zlib1g-dev libsystemd-dev
  catch2 libbenchmark-dev nlohmann-json3-dev
)
# Optional extras for the sanitizer and fuzz builds (clang's libFuzzer runtime).
if [[ "${HEPD_WITH_FUZZ:-0}" == 1 ]]; then
  build_pkgs+=(clang libclang-rt-14-dev)
fi
# Extra packages a caller needs (e.g. the interoperability tests: kamailio sip-tester).
if [[ -n "${HEPD_EXTRA_PKGS:-}" ]]; then
  read -r -a extra <<<"$HEPD_EXTRA_PKGS"
  build_pkgs+=("${extra[@]}")
fi

missing=()
for p in "${build_pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#build_pkgs[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
