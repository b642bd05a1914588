#!/usr/bin/env bash
# Install the build tree into a scratch prefix, then build and run a consumer
# with find_package(cbatch), and compile it again through pkg-config.
#   run.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$src/tests/package" -B "$scratch/consumer" -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer" >/dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib:$scratch/prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/consumer/consumer"
libdir=$(ls -d "$scratch"/prefix/lib*/pkgconfig | head -1)
pcversion=$(PKG_CONFIG_PATH=$libdir pkg-config --modversion cbatch)
PKG_CONFIG_PATH=$libdir cc -o "$scratch/consumer-pc" "$src/tests/package/consumer.c" \
	-DCONSUMER_PACKAGE_VERSION="\"$pcversion\"" \
	$(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs cbatch)
LD_LIBRARY_PATH="$scratch/prefix/lib:$scratch/prefix/lib64:${LD_LIBRARY_PATH:-}" "$scratch/consumer-pc"
