#!/usr/bin/python3
"""--quiet silences progress, never an integrity warning.

A farm given a journal that is not one (a bad header) moves it aside and recomputes;
with --quiet --json it must still say so on stderr ("farm: warning: ...") and in the
job's summary (`"warnings": [...]`), and print no progress line. A farm with a damaged
record in the middle of its journal (skipped bytes) the same; a clean run has an empty
"warnings" array.
Usage: test_quiet_warnings.py ENPU SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from farm_harness import ENV, demo_variant, journal_kinds, summary, wait_for


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-quiet-")
    job = demo_variant(h, tmp, "quiet", policies=["nodvfs", "enpu-all"],
                       phases={"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}})

    def farm(store, *extra):
        return subprocess.run([h.enpu, "farm", job, "--store", store, "--json", "--quiet", *extra],
                              capture_output=True, text=True, env=ENV, cwd=tmp, timeout=1500)

    clean = os.path.join(tmp, "clean.h5")
    r = farm(clean)
    h.check("a clean --quiet run: exit 0, no warnings, no progress line",
            r.returncode == 0 and summary(r.stdout).get("warnings") == [] and "tasks (" not in r.stderr,
            f"exit {r.returncode}: {r.stderr[-300:]} {r.stdout[-300:]}")

    store = os.path.join(tmp, "badhead.h5")
    open(store + ".journal", "wb").write(b"this is no farm journal" * 4)
    r = farm(store)
    w = summary(r.stdout).get("warnings")
    h.check("a journal with a bad header under --quiet: the warning on stderr",
            r.returncode == 0 and "farm: warning:" in r.stderr and "not a farm journal" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("... and in the --json summary's warnings",
            isinstance(w, list) and len(w) == 1 and "not a farm journal" in w[0], str(w))
    h.check("... and no progress line", "tasks (" not in r.stderr, r.stderr[-300:])

    # A damaged record amid intact ones: the journal of a farm killed (-9) once it has
    # synced records (a grid with dvfs-c's genetic algorithm: seconds per bucket), one
    # byte flipped inside its first record.
    long_job = demo_variant(h, tmp, "quiet-long", policies=["nodvfs", "dvfs-c"])
    part = os.path.join(tmp, "part.h5")
    p = subprocess.Popen([h.enpu, "farm", long_job, "--store", part, "--quiet", "--checkpoint-s", "1e6"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp)
    wait_for(lambda: len(journal_kinds(part)) >= 3 or p.poll() is not None, 1500)
    p.kill()
    p.communicate()
    kinds = journal_kinds(part)
    if h.check("the killed farm left journal records", len(kinds) >= 3, str(kinds)):
        data = bytearray(open(part + ".journal", "rb").read())
        data[16 + 16 + 4] ^= 0x55  # inside the first record's frame
        skipped = os.path.join(tmp, "skipped.h5")
        open(skipped + ".journal", "wb").write(bytes(data))
        r = subprocess.run([h.enpu, "farm", long_job, "--store", skipped, "--json", "--quiet"], capture_output=True,
                           text=True, env=ENV, cwd=tmp, timeout=1500)
        w = summary(r.stdout).get("warnings") or []
        h.check("a damaged journal record under --quiet: warned on stderr and in the summary",
                r.returncode == 0 and "farm: warning:" in r.stderr and any("damaged bytes" in x for x in w),
                f"exit {r.returncode}: {r.stderr[-400:]} {w}")
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
