# aarch64 Linux with Debian's cross toolchain (crossbuild-essential-arm64) and multiarch arm64
# libraries (dpkg --add-architecture arm64; libpcre2-dev:arm64 libssl-dev:arm64 libgtest-dev:arm64):
# scripts/install-deps.sh --arm64 installs both. The binaries run on an aarch64 machine or, here,
# under qemu-aarch64 (qemu-user), which ctest and the tests' scripts use as the emulator.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Multiarch: the arm64 libraries and their CMake/pkg-config files live in /usr/lib/aarch64-linux-gnu,
# the headers (architecture-independent) in /usr/include; no separate sysroot.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# The qemu CPU model comes from QEMU_CPU at run time (cortex-a53: NEON only; neoverse-n1: with
# dotprod; max: with i8mm); qemu's default is "max".
find_program(TANDEM_QEMU_AARCH64 qemu-aarch64)
if(TANDEM_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TANDEM_QEMU_AARCH64})
endif()
