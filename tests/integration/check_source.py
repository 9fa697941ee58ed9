#!/usr/bin/python3
"""check_source.py — two rules of the source tree that no compiler checks.

Usage: /usr/bin/python3 check_source.py SOURCE_ROOT CTAGS

1. Every C function in src/ has a name no other module uses. A reader who finds
   `validate_bucket` or `grid_free` expects the validate or the grid module, and a
   backtrace or profile that shows a bare name must not leave them guessing. Over the
   function definitions Universal Ctags finds in src/<module>/ (static ones included,
   which `nm` of an optimised build misses when they are inlined):
   a. no function name is defined in two modules;
   b. no function carries another module's prefix (`grid_` outside src/grid, `enpu_`
      outside src/common, ...).
   Names repeated inside one module are allowed (static helpers of two files).
2. Comments and scripts point only at what a clone of the repository has: no design
   document outside it (DESIGN.md), no issue numbers of a tracker, no paths of one
   machine (/work/...). They cite src/README.md, the paper by section, or results/.
Prints one line per offence and a final "N passed, M failed"; exits 1 on any failure.
"""
import collections
import pathlib
import re
import subprocess
import sys

# The prefix of each module's public names (common's is the project's).
PREFIX = {"common": "enpu_"}

# Names that break rule 1 in code other branches are rewriting now; each goes when its
# module is next edited (the CLI's option parser). Printed, not failed.
PENDING = {
    "graph_json": "cli: its option parser",
    "report_paper": "cli: its option parser",
    "report_path": "cli: its option parser",
    "store_diff_cmd": "cli: its option parser",
    "store_info": "cli: its option parser",
    "store_verify": "cli: its option parser",
}

CITATION = re.compile(r"DESIGN\.md|\b[Ii]ssue [0-9]|/work/")
CITATION_TREES = ("src", "tests", "tools", "slurm", "CMakeLists.txt", "Makefile")
CITATION_SUFFIXES = {".c", ".h", ".py", ".sh", ".txt", ".sbatch", ".in", ".md", ""}


def definitions(root, ctags):
    """(name, module, file:line) of every function defined in src/<module>/."""
    out = subprocess.run([ctags, "-x", "--languages=C", "--kinds-C=f", "-R", "src"],
                         cwd=root, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        name, kind, lineno, path = line.split(None, 4)[:4]
        parts = pathlib.PurePosixPath(path).parts
        if kind == "function" and len(parts) >= 3 and parts[0] == "src":
            yield name, parts[1], f"{path}:{lineno}"


def name_problems(root, ctags):
    """{name: [problem, ...]} for every function name, [] when it is fine."""
    where = collections.defaultdict(lambda: collections.defaultdict(list))
    for name, module, place in definitions(root, ctags):
        where[name][module].append(place)
    modules = {m for per in where.values() for m in per}
    if len(modules) < 5:  # ctags found nothing useful: fail rather than pass vacuously
        return {"(ctags)": [f"found functions in {len(modules)} modules only"]}
    prefixes = {m: PREFIX.get(m, m + "_") for m in modules}
    result = {}
    for name, per in where.items():
        problems = []
        if len(per) > 1:
            problems.append("defined in " + ", ".join(p for m in sorted(per) for p in per[m]))
        for module in sorted(per):
            owner = [m for m, p in prefixes.items() if m != module and name.startswith(p)]
            if owner:
                problems.append(f"{', '.join(per[module])} carries {owner[0]}'s prefix")
        result[name] = problems
    return result


def citation_problems(root):
    """[file:line: text] of every line that cites something outside the repository."""
    me = pathlib.Path(__file__).resolve()
    found = []
    for top in CITATION_TREES:
        base = root / top
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for f in files:
            if not f.is_file() or f.resolve() == me or f.suffix not in CITATION_SUFFIXES:
                continue
            for no, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                if CITATION.search(line):
                    found.append(f"{f.relative_to(root)}:{no}: {line.strip()}")
    return found


def main():
    root = pathlib.Path(sys.argv[1])
    ctags = sys.argv[2]
    passed = failed = 0
    for name, problems in sorted(name_problems(root, ctags).items()):
        if problems and name in PENDING:
            print(f"PENDING {name} ({PENDING[name]}): " + "; ".join(problems))
        elif problems:
            failed += 1
            print(f"FAIL {name}: " + "; ".join(problems))
        else:
            passed += 1
    cited = citation_problems(root)
    for line in cited:
        print(f"FAIL cites outside the repository: {line}")
    failed += len(cited)
    passed += not cited
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
