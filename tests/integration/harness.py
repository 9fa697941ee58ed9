"""Shared helpers of the integration tests: a pass/fail counter that prints one line per
check, and runners of the real `enpu` binary. A test script does

    from harness import Harness
    h = Harness(sys.argv[1], sys.argv[2])   # ENPU_BINARY SOURCE_DIR
    h.check("name", condition, "detail shown on failure")
    ...
    h.finish()                               # prints the counts, exits 1 on any failure

`run` executes in the source directory so job paths like jobs/demo.json resolve."""
import json
import subprocess
import sys


def md_rows(md, header_start):
    """Rows (lists of cells) of every markdown table whose header starts with header_start."""
    rows, inside = [], False
    for line in md.splitlines():
        if line.startswith(header_start):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        else:
            inside = False
    return rows


class Harness:
    def __init__(self, enpu, src):
        self.enpu, self.src = enpu, src
        self.passed = self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name} {detail}")
        return cond

    def fail(self, name, detail=""):
        """A check that failed where it was found (the test has no separate condition)."""
        return self.check(name, False, detail)

    def run(self, *args, **kw):
        kw.setdefault("cwd", self.src)
        return subprocess.run([self.enpu, *args], capture_output=True, text=True, **kw)

    def run_json(self, *args):
        r = self.run(*args, "--json")
        if r.returncode != 0:
            raise SystemExit(f"{args}: exit {r.returncode}: {r.stderr}")
        return json.loads(r.stdout)

    def finish(self):
        print(f"\n{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
