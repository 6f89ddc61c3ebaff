# Cross-build for Debian arm64 (the Jetson Thor's aarch64) with Debian's cross toolchain
# (crossbuild-essential-arm64) and multiarch -dev packages (libfoo-dev:arm64). Tests run under
# qemu-user: ctest prefixes every test executable with CMAKE_CROSSCOMPILING_EMULATOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: arm64 libraries and their CMake/pkg-config files live under /usr/lib/aarch64-linux-gnu,
# beside the host's; headers are shared in /usr/include.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# protoc runs on the build machine; find_program must not look for an arm64 one.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# -dev packages that are not co-installable with the host's, unpacked by
# `packaging/install-deps.sh --arm64 SYSROOT` (pass -DHEPD_ARM64_SYSROOT=SYSROOT).
if(HEPD_ARM64_SYSROOT)
  list(APPEND CMAKE_PREFIX_PATH ${HEPD_ARM64_SYSROOT}/usr)
endif()
# The arm64 runtime libraries are installed multiarch (/usr/lib/aarch64-linux-gnu), so no RUNPATH:
# one into the sysroot would end up in the package.
set(CMAKE_SKIP_RPATH ON)
