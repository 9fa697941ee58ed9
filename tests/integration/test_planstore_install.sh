#!/bin/bash
# Install the `planstore` component of a build into a temporary prefix, then build the
# example client against it three ways (CMake package, shared and static; pkg-config)
# and check the plan each prints for the unit test's synthetic store.
# Usage: test_planstore_install.sh BUILD_DIR SOURCE_DIR TEST_STORE_BINARY
set -euo pipefail
build=$1 src=$2 test_store=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --component planstore --prefix "$tmp/prefix" >/dev/null
# The API header and the error codes it returns, nothing else (common.h is private).
headers=$(cd "$tmp/prefix/include/enpu" && ls | tr '\n' ' ')
[[ "$headers" == "enpu_err.h planstore.h " ]] || { echo "FAIL: installed headers: $headers"; exit 1; }
"$test_store" --write "$tmp/plans.h5"

# Prefill batch 3, seq 500 pads to bucket 4 x 512; an unbounded target takes the whole
# walk: op0 1 x 170 ns, op1 2 x 340 ns, op2 2 x 390 ns = 1630 ns, and
# 1 x 600 + 2 x 1200 + 2 x 2400 = 7800 nJ (the fixture's Pareto formulas).
want="policy=enpu-all batch=4 seq=512 prefix=6 time_ns=1630 energy_nj=7800"
check() {
  local out
  out=$("$@" "$tmp/plans.h5" prefill 3 500 1e30)
  if [[ "$(head -1 <<<"$out")" != "$want" ]]; then
    echo "FAIL: $1 printed '$(head -1 <<<"$out")', expected '$want'"
    exit 1
  fi
  [[ $(grep -c '^op ' <<<"$out") == 3 ]] || { echo "FAIL: $1 listed no 3 ops"; exit 1; }
  # planstore_lookup_suffix links and answers: half the instances in half the time fits.
  grep -Eq '^suffix from=[1-9][0-9]* of [1-9][0-9]* prefix=[0-9]+ time_ns=[0-9.e+]+ fits=1$' <<<"$out" ||
    { echo "FAIL: $1 printed no fitting suffix: $(grep '^suffix' <<<"$out")"; exit 1; }
}

cmake -S "$src/tests/integration/planstore_example" -B "$tmp/example" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/example" >/dev/null
check "$tmp/example/planstore_example"
check "$tmp/example/planstore_example_static"

pc_dir=$(dirname "$(find "$tmp/prefix" -name enpu_planstore.pc)")
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs enpu_planstore)
libdir=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --variable=libdir enpu_planstore)
cc -o "$tmp/example_pc" "$src/tests/integration/planstore_example/main.c" $flags -Wl,-rpath,"$libdir"
check "$tmp/example_pc"

# A store outside the grid is a clean error, not a crash.
if "$tmp/example/planstore_example" "$tmp/plans.h5" prefill 64 500 1e30 2>"$tmp/err"; then
  echo "FAIL: a batch beyond the largest bucket succeeded"; exit 1
fi
grep -q "largest batch is 4" "$tmp/err" || { echo "FAIL: message: $(cat "$tmp/err")"; exit 1; }
echo ok
