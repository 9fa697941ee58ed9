#!/usr/bin/env python3
"""burst_trace.py — build burst stress traces from an Azure LLM inference CSV.

A trace's five-minute mean hides bursts; these traces put a controlled burst into the
shipped conversation trace so that a replay (and a `--rates` sweep on the result) shows
what a scheduler does when arrivals spike for seconds. Two shapes:

  --window START_S,LENGTH_S,K   the requests arriving in [START, START + LENGTH) seconds
                                after the first row come K times (K >= 1, any real)
  --onoff ON_S,OFF_S,K          every period of ON + OFF seconds, its first ON seconds
                                come K times (on/off bursts over the whole trace)

Copies follow the replay's own rate shaping (src/replay/replay_trace.c): K = 2.5 gives
every request in a burst 2 copies and a third with probability 0.5; the copies beyond
the first arrive uniformly at random between the request and the next one, so the
burst keeps the trace's shape (context and generated tokens are the request's own).
Rows outside the bursts are written unchanged. The output is sorted by time (stable)
and has the input's header; the same arguments and --seed give the same bytes.

`--peak` prints the trace's peak arrival rate over one-second windows instead (the
number the replay's sweep reports as peak_arrivals_per_s).

Examples (docs/replay.md, "Burst stress traces"):
  tools/burst_trace.py jobs/traces/AzureLLMInferenceTrace_conv.csv --window 1200,60,4 -o burst.csv
  tools/burst_trace.py jobs/traces/AzureLLMInferenceTrace_conv.csv --onoff 10,50,3 -o onoff.csv
"""
import argparse
import datetime
import random
import sys


def parse_time(text, path, line):
    """Seconds since the epoch of a trace timestamp (naive: the offset, if any, is kept
    as written, as the replay does)."""
    t = text.strip()
    for sign in "+-":
        cut = t.rfind(sign)
        if cut > 10:  # an offset after the time, not the date's dashes
            t = t[:cut]
    date, _, clock = t.partition(" ")
    whole, _, frac = clock.partition(".")
    try:
        base = datetime.datetime.strptime(date + " " + whole, "%Y-%m-%d %H:%M:%S")
        return (base - datetime.datetime(1970, 1, 1)).total_seconds() + (float("0." + frac) if frac else 0.0)
    except ValueError as e:
        sys.exit(f"{path}:{line}:1: expected a timestamp YYYY-MM-DD HH:MM:SS[.f], got '{text}' ({e})")


def format_time(sec):
    whole = int(sec // 1)
    frac = sec - whole
    ts = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=whole)
    return ts.strftime("%Y-%m-%d %H:%M:%S") + f".{int(round(frac * 1e7)):07d}"[:8]


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        header = f.readline().rstrip("\n")
        for n, line in enumerate(f, start=2):
            line = line.strip()
            if not line:
                continue
            parts = line.split(",")
            if len(parts) != 3:
                sys.exit(f"{path}:{n}:1: expected TIMESTAMP,ContextTokens,GeneratedTokens")
            rows.append((parse_time(parts[0], path, n), parts[1], parts[2]))
    if not rows:
        sys.exit(f"{path}: no data rows")
    rows.sort(key=lambda r: r[0])
    return header, rows


def triple(text, what):
    try:
        a, b, k = (float(x) for x in text.split(","))
    except ValueError:
        sys.exit(f"{what}: expected three numbers A,B,K, got '{text}'")
    if a < 0 or b <= 0 or k < 1:
        sys.exit(f"{what}: expected A >= 0, B > 0 and K >= 1, got '{text}'")
    return a, b, k


def in_burst(rel, args):
    if args.window:
        start, length, k = args.window
        return k if start <= rel < start + length else 1.0
    on, off, k = args.onoff
    return k if (rel % (on + off)) < on else 1.0


def shape(rows, args):
    rng = random.Random(args.seed)
    t0 = rows[0][0]
    out = []
    for i, (t, ctx, gen) in enumerate(rows):
        out.append((t, ctx, gen))
        k = in_burst(t - t0, args)
        if k <= 1.0:
            continue
        gap = rows[i + 1][0] - t if i + 1 < len(rows) else 0.0
        extra = int(k) - 1 + (1 if rng.random() < k - int(k) else 0)
        for _ in range(extra):
            out.append((t + rng.random() * gap, ctx, gen))
    out.sort(key=lambda r: r[0])
    return out


def peak_per_s(rows):
    counts = {}
    t0 = rows[0][0]
    for t, _, _ in rows:
        s = int((t - t0) // 1)
        counts[s] = counts.get(s, 0) + 1
    sec, n = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))
    return n, sec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--window", type=lambda s: triple(s, "--window"))
    g.add_argument("--onoff", type=lambda s: triple(s, "--onoff"))
    g.add_argument("--peak", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--out", help="output CSV (default stdout)")
    args = ap.parse_args()
    header, rows = load(args.trace)
    if args.peak:
        n, sec = peak_per_s(rows)
        print(f"peak {n} arrivals/s in second {sec} after the first row; {len(rows)} rows")
        return
    out = shape(rows, args)
    text = header + "\n" + "\n".join(f"{format_time(t)},{c},{g}" for t, c, g in out) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
