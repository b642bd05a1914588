#!/usr/bin/env bash
# Install the build tree into a scratch prefix, then build and run a consumer
# with find_package(cbatch), and compile it again through pkg-config; then
# build and run the README's "Writing a job" sample the same way.
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

# The README's "Writing a job" sample compiles as printed (no warnings) and runs.
awk '/^## Writing a job/ { on = 1 } on && /^```c$/ { grab = 1; next } grab && /^```$/ { exit }
     grab { print }' "$src/README.md" > "$scratch/readme_post.c"
grep -q 'cb_registry_new_job' "$scratch/readme_post.c"
PKG_CONFIG_PATH=$libdir cc -std=c11 -Wall -Wextra -pedantic -Werror -o "$scratch/readme_post" \
	"$scratch/readme_post.c" $(PKG_CONFIG_PATH=$libdir pkg-config --cflags --libs cbatch)
LD_LIBRARY_PATH="$scratch/prefix/lib:$scratch/prefix/lib64:${LD_LIBRARY_PATH:-}" \
	"$scratch/readme_post" jobs | grep -q 'seller:long (required)'
echo "package: the README sample builds against the installed package and lists its job"
