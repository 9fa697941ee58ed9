#!/bin/bash
# libenpu_planstore.so exports its API and nothing else: the dynamic symbols it defines
# are exactly the functions planstore.h declares with PLANSTORE_API, so the project's
# internals (store_*, enpu_*) can neither clash with a serving runtime's symbols nor
# become an ABI by accident.
# Usage: test_planstore_symbols.sh LIBENPU_PLANSTORE_SO PLANSTORE_H
set -euo pipefail
lib=$1 header=$2
api=$(grep -E '^PLANSTORE_API ' "$header" | sed -E 's/^[^(]*[ *]([A-Za-z_][A-Za-z_0-9]*)\(.*/\1/' | sort)
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
n=$(wc -l <<<"$api")
if (( n < 10 )); then
  echo "FAIL: found only $n PLANSTORE_API declarations in $header"; exit 1
fi
if [[ "$api" != "$exported" ]]; then
  echo "FAIL: exported symbols differ from the API (< API only, > exported only):"
  diff <(echo "$api") <(echo "$exported") | grep '^[<>]'
  exit 1
fi
echo "ok: $n symbols, exactly the API"
