#!/usr/bin/python3
"""format.py — the C sources in the style of .clang-format (`make format`, integration_format).

Usage: tools/format.py [--check] [--clang-format BIN] [ROOT]

The files are every .c and .h under src/ and tests/ that git tracks in ROOT (default: this
script's checkout; every such file on disk when ROOT is not a git checkout). Without
--check, clang-format rewrites them in place (running it twice changes nothing). With
--check nothing is written: each file clang-format would change is printed with the first
place it differs, and the exit status is 1 when there is one.

The style is defined for clang-format 14 (Debian 12's `clang-format`); another major version
lays some constructs out differently, so it is refused: a failure for `make format` and in
CI, exit status 77 (CTest: skipped) for --check elsewhere.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

VERSION = 14
TREES = ("src", "tests")
SKIP = 77
# `file:line:col: error: code should be clang-formatted [-Wclang-format-violations]`
VIOLATION = re.compile(r"^(.+?):(\d+):(\d+): (?:error|warning): code should be clang-formatted")


def sources(root):
    """Relative paths of the C files to format, sorted."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "--", *(f"{t}/*.[ch]" for t in TREES)],
                             check=True, capture_output=True, text=True).stdout.split("\n")
        files = [f for f in out if f and (root / f).is_file()]
    except (OSError, subprocess.CalledProcessError):
        files = [str(p.relative_to(root)) for t in TREES for p in (root / t).rglob("*.[ch]")]
    return sorted(files)


def major_version(binary):
    """clang-format's major version, or None when it cannot be run."""
    try:
        out = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    m = re.search(r"clang-format version (\d+)", out)
    return int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="report files that differ, change nothing")
    ap.add_argument("--clang-format", default="clang-format", help="the clang-format binary")
    ap.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    a = ap.parse_args()
    root = pathlib.Path(a.root).resolve()
    style = root / ".clang-format"
    if not style.is_file():
        sys.exit(f"format.py: {style} is missing")
    version = major_version(a.clang_format)
    if version != VERSION:
        found = f"is version {version}" if version else "cannot be run"
        print(f"format.py: {a.clang_format} {found}; the style is defined for clang-format {VERSION} "
              f"(Debian 12's clang-format package)", file=sys.stderr)
        sys.exit(SKIP if a.check and not os.environ.get("CI") else 1)
    files = sources(root)
    if not files:
        sys.exit(f"format.py: no C files under {', '.join(TREES)} of {root}")
    cmd = [a.clang_format, f"--style=file:{style}", "--fallback-style=none"]
    cmd += ["--dry-run", "--Werror", "--ferror-limit=1"] if a.check else ["-i"]
    r = subprocess.run(cmd + files, cwd=root, capture_output=True, text=True)
    first = {}
    for line in r.stderr.splitlines():
        m = VIOLATION.match(line)
        if m: first.setdefault(m.group(1), f"{m.group(1)}:{m.group(2)}:{m.group(3)}")
    if r.returncode != 0 and not first:
        sys.exit(f"format.py: {' '.join(cmd[:4])} ... failed:\n{r.stderr}")
    if not a.check:
        print(f"formatted {len(files)} files")
        return 0
    for f in sorted(first):
        print(f"{first[f]}: not formatted")
    print(f"{len(files) - len(first)} of {len(files)} files formatted"
          + (f"; {len(first)} differ: run `make format`" if first else ""))
    return 1 if first else 0


if __name__ == "__main__":
    sys.exit(main())
