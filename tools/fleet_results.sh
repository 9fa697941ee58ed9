#!/bin/sh
# fleet_results.sh — regenerate results/fleet/ (docs/fleet.md, "Measurements"): the
# conv trace's hour and 24-hour day (1x and 12x) with every policy x gated idle x
# autoscaling, the --rates sweeps of the conv trace and of a one-minute 6x burst, the
# wake-latency break-even, the saving split and the Figure 22-shaped plot.
#
# usage: tools/fleet_results.sh STORE [ENPU] [OUT]
#   STORE  a Llama3-70B plan store for Table 3's cluster (results/llama3-70b/plans.h5
#          after `make reference`, or the synthetic one of
#          `build/tests/unit/test_replay --write-store FILE`)
# ~10 min on 2 cores.
set -eu
STORE=$1
ENPU=${2:-build/enpu}
OUT=${3:-results/fleet}
TRACE=jobs/traces/AzureLLMInferenceTrace_conv.csv
CLUSTER=jobs/clusters/llama3-70b.json
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
R="$ENPU replay --store $STORE --cluster $CLUSTER --threads 2"
mkdir -p "$OUT"
$R --trace $TRACE --policy all --fleet +as,@gated,@gated+as --windows-only --out "$TMP/hour" > "$OUT/hour.txt"
$R --trace $TRACE --policy all --fleet +as,@gated,@gated+as --day --windows-only --out "$TMP/day" > "$OUT/day.txt"
$R --trace $TRACE --policy nodvfs,enpu-all --fleet @gated,+as,@gated+as --day --rate 12 --windows-only \
  --out "$TMP/day-12x" > "$OUT/day-12x.txt"
for run in hour day day-12x; do
  mkdir -p "$OUT/$run" && cp "$TMP/$run/summary.json" "$OUT/$run/"
  python3 tools/fleet_split.py "$OUT/$run/summary.json" > "$OUT/$run-split.md"
done
mkdir -p "$OUT/day-figure" && rm -f "$OUT"/day-figure/windows_*.csv
for p in nodvfs enpu-all enpu-all+as enpu-all@gated+as; do cp "$TMP/day/windows_$p.csv" "$OUT/day-figure/"; done
$ENPU report "$STORE" --replay "$OUT/day-figure" --out "$TMP/report" > /dev/null
cp "$TMP"/report/replay_energy.dat "$TMP"/report/replay_energy.gp "$TMP"/report/replay_energy.png "$OUT/day-figure/"
mkdir -p "$OUT/sweep" && $R --trace $TRACE --policy nodvfs,enpu-all --fleet +as,@gated+as --rates 1,2,4,8,12,16 \
  --out "$OUT/sweep" > "$OUT/sweep/sweep.txt"
$ENPU trace burst $TRACE --window 1860,60,6 -o "$TMP/burst-window.csv"
mkdir -p "$OUT/burst-window-sweep" && $R --trace "$TMP/burst-window.csv" --policy nodvfs,enpu-all --fleet +as,+pas \
  --rates 1,1.5,2,2.5,3 --out "$OUT/burst-window-sweep" > "$OUT/burst-window-sweep/sweep.txt"
rm -f "$OUT"/*/gnuplot.log
B="python3 tools/fleet_breakeven.py --enpu $ENPU --store $STORE --cluster $CLUSTER"
$B --trace $TRACE --rates 1,8 --json "$OUT/breakeven.json" > "$OUT/breakeven.txt"
W=10,1000,2969,10000,30000,120000,600000
$B --trace "$TMP/burst-window.csv" --rates 1,3 --wake-ms $W --json "$OUT/breakeven-burst-window.json" \
  > "$OUT/breakeven-burst-window.txt"
$B --trace "$TMP/burst-window.csv" --fleet +pas --rates 1,3 --wake-ms $W --json "$OUT/breakeven-burst-window-pas.json" \
  > "$OUT/breakeven-burst-window-pas.txt"
