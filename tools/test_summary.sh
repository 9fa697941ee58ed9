#!/bin/bash
# test_summary.sh — the one line `make test` ends with: every tier summed from ctest's
# own "N tests failed out of M" lines, e.g. "57 + 13 tests passed (Release + ASan), fuzzers
# clean" (the fuzzers ran before the tests; `make test` stops when one crashes).
# Usage: test_summary.sh RELEASE_LOG RELEASE_STATUS ASAN_LOG ASAN_STATUS
set -u
counts() { # "failed total" of the log's last ctest summary, "? ?" when it has none
  local line
  line=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$1" 2>/dev/null | tail -1)
  [[ $line =~ ^([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+)$ ]] && echo "${BASH_REMATCH[1]} ${BASH_REMATCH[2]}" ||
    echo "? ?"
}
read -r rf rn <<<"$(counts "$1")"
read -r af an <<<"$(counts "$3")"
if [[ $2 == 0 && $4 == 0 ]]; then
  echo "== $rn + $an tests passed (Release + ASan), fuzzers clean"
else
  echo "== FAILED: Release $rf of $rn failed (exit $2), ASan $af of $an failed (exit $4); fuzzers clean"
fi
