#!/usr/bin/env bash
# Builds the official CatBoost model library (libcatboostmodel.so) from the
# catboost 1.2.7 source distribution on PyPI, into a cache outside the repo:
#
#   ${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}/catboost-1.2.7/
#       lib/libcatboostmodel.so (+ its SONAME symlink)
#       include/c_api.h
#       build.log
#
# Idempotent: exits at once when the library is already there; an interrupted
# build resumes (the unpacked, patched source and the ninja tree are kept).
# Why 1.2.7: 1.2.10 does not compile with clang-16 (Debian 12's newest clang).
# Why the CMake patch: upstream fetches OpenSSL, ragel and yasm through conan,
# which needs network access beyond package registries; Debian has all three.
#
# Environment:
#   EDGEGUARD_CACHE        cache root (default ~/.cache/edgeguard)
#   EDGEGUARD_BUILD_JOBS   ninja parallelism (default: number of CPUs)
#   EDGEGUARD_FORCE=1      rebuild even when the library exists
set -euo pipefail

CATBOOST_VERSION=1.2.7
CACHE="${EDGEGUARD_CACHE:-$HOME/.cache/edgeguard}"
PREFIX="$CACHE/catboost-$CATBOOST_VERSION"
SRC="$PREFIX/src"
BUILD="$PREFIX/build"
LOG="$PREFIX/build.log"
JOBS="${EDGEGUARD_BUILD_JOBS:-$(nproc)}"
LIB="$PREFIX/lib/libcatboostmodel.so"

built() {
    [[ -f "$LIB" && -f "$PREFIX/include/c_api.h" && "${EDGEGUARD_FORCE:-0}" != 1 ]]
}

if built; then
    echo "libcatboostmodel: already built: $LIB"
    exit 0
fi

mkdir -p "$PREFIX"
# Two ninjas in one build tree corrupt it: a second invocation (another make
# target, another terminal) waits for the first, then finds the library built.
exec 9>"$PREFIX/.build.lock"
if ! flock -n 9; then
    echo "libcatboostmodel: another build holds $PREFIX/.build.lock; waiting for it"
    flock 9
    if built; then
        echo "libcatboostmodel: already built: $LIB"
        exit 0
    fi
fi
echo "libcatboostmodel: building CatBoost $CATBOOST_VERSION into $PREFIX"
echo "libcatboostmodel: build log: $LOG"
# Everything below goes to the log; failures point there.
exec 3>&1
exec >>"$LOG" 2>&1
trap 'rc=$?; if (( rc != 0 )); then echo "libcatboostmodel: FAILED (exit $rc), see $LOG" >&3; tail -n 30 "$LOG" >&3; fi' EXIT

step() {
    echo "== $*"
    echo "libcatboostmodel: $*" >&3
}

die() {
    echo "ERROR: $*"
    echo "libcatboostmodel: ERROR: $*" >&3
    exit 1
}

step "checking prerequisites"
APT_PACKAGES=(clang-16 lld-16 cmake ninja-build ragel yasm libssl-dev libclang-dev)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    step "installing apt packages: ${missing[*]}"
    SUDO=""
    [[ $(id -u) -ne 0 ]] && SUDO=sudo
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
fi
if ! python3 -c 'import wheel, setuptools' 2>/dev/null; then
    step "installing pip packages: wheel setuptools"
    python3 -m pip install wheel setuptools
fi

step "fetching the catboost $CATBOOST_VERSION source distribution"
DL="$CACHE/downloads"
TARBALL="$DL/catboost-$CATBOOST_VERSION.tar.gz"
mkdir -p "$DL"
if [[ ! -f "$TARBALL" ]]; then
    python3 -m pip download --no-deps --no-binary :all: --no-build-isolation \
        "catboost==$CATBOOST_VERSION" -d "$DL"
fi
[[ -f "$TARBALL" ]] || die "pip download did not produce $TARBALL"

# Unpack and patch once; an interrupted build resumes where ninja stopped
# (unpacking again would touch every source and rebuild from scratch).
ALL_SRC="$SRC/catboost_all_src"
if [[ ! -f "$SRC/.edgeguard-patched" ]]; then
    rm -rf "$SRC"
    mkdir -p "$SRC"
    tar -xzf "$TARBALL" -C "$SRC" --strip-components=1
    [[ -f "$ALL_SRC/CMakeLists.txt" ]] || die "no catboost_all_src/CMakeLists.txt in $TARBALL"

    step "patching CMakeLists.txt to use Debian's OpenSSL instead of conan"
    python3 - "$ALL_SRC/CMakeLists.txt" <<'PY'
import sys

path = sys.argv[1]
text = open(path).read()

conan_include = "include(cmake/conan1_deprecated.cmake)\n"
conan_block = """if (CMAKE_CROSSCOMPILING)
  include(${PROJECT_BINARY_DIR}/conan_paths.cmake)
else()
  conan_cmake_autodetect(settings)
  conan_cmake_install(
    PATH_OR_REFERENCE ${PROJECT_SOURCE_DIR}
    INSTALL_FOLDER ${PROJECT_BINARY_DIR}
    BUILD missing
    REMOTE conancenter
    SETTINGS ${settings}
    ENV "CONAN_CMAKE_GENERATOR=${CMAKE_GENERATOR}"
    CONF "tools.cmake.cmaketoolchain:generator=${CMAKE_GENERATOR}"
  )
endif()
"""
replacement = "include(${PROJECT_BINARY_DIR}/conan_paths.cmake)\n"

for needle, what in ((conan_include, "conan1_deprecated include"), (conan_block, "conan install block")):
    count = text.count(needle)
    if count != 1:
        sys.exit(f"CMakeLists.txt: expected the {what} exactly once, found it {count} times; "
                 "the upstream file changed, update this patch")

text = text.replace(conan_include, "").replace(conan_block, replacement)
open(path, "w").write(text)
PY
    touch "$SRC/.edgeguard-patched"
fi

# Writes $2 from stdin unless it already holds exactly that; says whether it changed.
# Rewriting an unchanged file would make ninja re-run cmake for nothing.
update_file() {
    local tmp="$1.tmp"
    cat >"$tmp"
    if cmp -s "$tmp" "$1"; then
        rm -f "$tmp"
        return 1
    fi
    mv "$tmp" "$1"
}

mkdir -p "$BUILD/bin"
reconfigure=0
[[ -f "$BUILD/build.ninja" ]] || reconfigure=1

# Stands in for the file conan would generate: the targets the tree links against.
update_file "$BUILD/conan_paths.cmake" <<'CMAKE' && reconfigure=1
find_package(OpenSSL REQUIRED)
if (NOT TARGET OpenSSL::OpenSSL)
  add_library(OpenSSL::OpenSSL INTERFACE IMPORTED)
  target_link_libraries(OpenSSL::OpenSSL INTERFACE OpenSSL::SSL OpenSSL::Crypto)
endif()
CMAKE

# The tree links with -nodefaultlibs (cmake/global_flags.linker.gnu.cmake), so
# libc and libm must be named, as CatBoost's own build/toolchains/clang.toolchain does.
update_file "$BUILD/toolchain.cmake" <<'CMAKE' && reconfigure=1
set(CMAKE_C_COMPILER clang-16)
set(CMAKE_CXX_COMPILER clang++-16)
set(CMAKE_C_STANDARD_LIBRARIES "-lc -lm")
set(CMAKE_CXX_STANDARD_LIBRARIES "-lc -lm")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-fuse-ld=lld")
CMAKE

# cmake/common.cmake looks for these tools in <build>/bin, where conan would copy them.
for tool in ragel yasm; do
    path=$(command -v "$tool") || die "$tool not found on PATH"
    ln -sf "$path" "$BUILD/bin/$tool"
done

if ((reconfigure)); then
    step "configuring (cmake)"
    cmake -S "$ALL_SRC" -B "$BUILD" -G Ninja \
        -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_TOOLCHAIN_FILE="$BUILD/toolchain.cmake" \
        -DCATBOOST_COMPONENTS=libs \
        -DHAVE_CUDA=no \
        -DCMAKE_POSITION_INDEPENDENT_CODE=On
fi

step "compiling (ninja -j$JOBS catboostmodel: 3376 steps, from 15 minutes to hours on 2 busy cores)"
ninja -C "$BUILD" -j "$JOBS" catboostmodel

built=$(find "$BUILD" -name 'libcatboostmodel.so*' -type f | head -n 1)
[[ -n "$built" ]] || die "ninja finished but no libcatboostmodel.so under $BUILD"

step "installing into $PREFIX"
mkdir -p "$PREFIX/lib" "$PREFIX/include"
cp "$ALL_SRC/catboost/libs/model_interface/c_api.h" "$PREFIX/include/c_api.h"
cp "$built" "$LIB.tmp"
mv "$LIB.tmp" "$LIB"
# The dynamic loader looks the library up by its SONAME.
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
if [[ -n "$soname" && "$soname" != libcatboostmodel.so ]]; then
    ln -sf libcatboostmodel.so "$PREFIX/lib/$soname"
fi

step "done: $LIB"
