#!/usr/bin/env bash
# Installs hepd's build and test dependencies from Debian 12 packages. Idempotent: installs only
# what is missing, and runs apt-get update only when something is.
#   packaging/install-deps.sh                 the host's build and test dependencies
#   packaging/install-deps.sh --arm64 SYSROOT the above, plus a cross toolchain, qemu-user and the
#                                             arm64 libraries (see arm64_pkgs below)
set -euo pipefail

arm64_sysroot=""
if [[ "${1:-}" == --arm64 ]]; then
  arm64_sysroot=${2:?"--arm64 needs a sysroot directory"}
fi

build_pkgs=(
  build-essential cmake ninja-build pkg-config
  libboost-dev libboost-system-dev
  libspdlog-dev libfmt-dev
  libyaml-cpp-dev
  libprotobuf-dev protobuf-compiler
  prometheus-cpp-dev libcivetweb-dev
  zlib1g-dev
  catch2 libbenchmark-dev nlohmann-json3-dev
)
# The ASan/UBSan and fuzz tree's compiler: clang 14 and its runtimes (libFuzzer, the sanitizers).
if [[ "${HEPD_WITH_FUZZ:-0}" == 1 ]]; then
  build_pkgs+=(clang-14 libclang-rt-14-dev)
fi
# Extra packages a caller needs (e.g. the interoperability tests: kamailio sip-tester).
if [[ -n "${HEPD_EXTRA_PKGS:-}" ]]; then
  read -r -a extra <<<"$HEPD_EXTRA_PKGS"
  build_pkgs+=("${extra[@]}")
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# Installs the packages of "$@" that are missing; names may carry an :arch qualifier.
install_missing() {
  local missing=() p
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if ((${#missing[@]} == 0)); then
    echo "install-deps: all $# packages present"
    return
  fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # --no-remove: a cross package must never replace a host one (the build would lose it).
  $SUDO apt-get install -y -qq --no-install-recommends --no-remove "${missing[@]}"
}

install_missing "${build_pkgs[@]}"
# Nothing to cross-build for on an arm64 machine.
[[ -z "$arm64_sysroot" || "$(dpkg --print-architecture)" == arm64 ]] && exit 0

# arm64: the cross compiler, qemu-user to run the tests, and the arm64 builds of what hepd links.
# Multiarch installs those that are co-installable with the host's (Multi-Arch: same) beside them.
# Catch2 2.x is header-only: the host's serves. Two -dev packages are not co-installable
# (libyaml-cpp-dev is not Multi-Arch, prometheus-cpp-dev depends on the civetweb binary package):
# they are unpacked into SYSROOT instead, which the toolchain file adds to the search path.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
arm64_pkgs=(
  crossbuild-essential-arm64 qemu-user-static file
  libboost-dev:arm64 libspdlog-dev:arm64 libfmt-dev:arm64 libprotobuf-dev:arm64
  libcivetweb-dev:arm64 libcurl4-openssl-dev:arm64 zlib1g-dev:arm64
  libyaml-cpp0.7:arm64 libprometheus-cpp-core1.0:arm64 libprometheus-cpp-pull1.0:arm64
  libprometheus-cpp-push1.0:arm64
)
install_missing "${arm64_pkgs[@]}"
# Their libraries come along, so that the -dev packages' links and CMake files resolve inside SYSROOT.
unpacked=(libyaml-cpp-dev:arm64 prometheus-cpp-dev:arm64 libyaml-cpp0.7:arm64
  libprometheus-cpp-core1.0:arm64 libprometheus-cpp-pull1.0:arm64 libprometheus-cpp-push1.0:arm64)
stamp="$arm64_sysroot/.unpacked"
if [[ "$(cat "$stamp" 2>/dev/null)" != "${unpacked[*]}" ]]; then
  rm -rf "$arm64_sysroot" && mkdir -p "$arm64_sysroot/debs"
  (cd "$arm64_sysroot/debs" && apt-get download "${unpacked[@]}" 2>/dev/null)
  for deb in "$arm64_sysroot"/debs/*.deb; do dpkg-deb -x "$deb" "$arm64_sysroot"; done
  echo "${unpacked[*]}" >"$stamp"
  echo "install-deps: unpacked ${unpacked[*]} into $arm64_sysroot"
fi
