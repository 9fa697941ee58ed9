#!/usr/bin/python3
"""The runnable shell blocks of the README and of every docs/ page run as written, on the
demo job.

Usage: /usr/bin/python3 test_readme.py ENPU_BINARY SOURCE_DIR

The pages are README.md and every docs/**/*.md (a page added later is read too), in that
order. A block is runnable when the line before its ```sh fence is `<!-- runnable -->`. Each of
its commands (a line, with `\\` continuations, without its trailing `# comment`) runs
with bash, in order, in a scratch git repository holding this checkout's tracked jobs/,
results/, tests/fixtures/ (the published configs and trace samples) and .gitignore
(committed), with
- every `jobs/<job>.json` a block names made the demo job under that job's name (the
  blocks show the full jobs; the demo is the same command, small), so that its outputs
  land where the full job's would, beside the shipped reference results/<job>/;
- `build/enpu` replaced by the binary under test, and `make TARGET` by this checkout's
  Makefile on that binary's build directory without rebuilding it (`make -o build`);
and must exit 0. The pages' shell is the user's: no Open MPI variable is added here, so
a block that needs one (root, more ranks than cores) must say it. Afterwards
`git status --porcelain` of the scratch repository is empty: running the README leaves
the shipped files as they were (run outputs go to the ignored runs/<job>/). Every input
file any shell block of the pages names (runnable or not) is shipped.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Harness

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
MARK = "<!-- runnable -->"


def pages():
    """README.md and every docs/**/*.md, relative to the checkout, README first."""
    docs = glob.glob(os.path.join(h.src, "docs", "**", "*.md"), recursive=True)
    return ["README.md"] + sorted(os.path.relpath(d, h.src) for d in docs)


def blocks(readme, block=0):
    """The commands of every runnable block, as (block number, command) in order, and the
    last block's number; blocks are numbered on from `block`."""
    lines = readme.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip() != MARK or i + 1 >= len(lines) or lines[i + 1].strip() != "```sh":
            continue
        cmd, k, block = "", i + 2, block + 1
        while k < len(lines) and lines[k].strip() != "```":
            text = re.sub(r"\s+#\s.*$", "", lines[k]).rstrip()  # a trailing comment
            cmd += text[:-1] + " " if text.endswith("\\") else text
            if not text.endswith("\\"):
                if cmd.strip():
                    out.append((block, cmd.strip()))
                cmd = ""
            k += 1
    return out, block


def on_demo(cmd, enpu, build_dir, makefile):
    cmd = re.sub(r"(?<![\w/])build/enpu\b", enpu, cmd)
    return re.sub(r"(?<![\w/-])make ", f"make -f {makefile} -o build -o deps BUILD={build_dir} ", cmd)


def unshipped_inputs(readme):
    """Files the README's shell blocks (runnable or not) read that the repository does not
    ship: every `*.csv|jsonl|json` argument but outputs (after -o/--output/--out, under
    runs/, results/ or build/) and `path/to/` placeholders, a block's `VAR=dir` expanded."""
    missing = set()
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        names = dict(re.findall(r"^(\w+)=(\S+)", block, re.M))
        for m in re.finditer(r"(\S+\s+)?([\w$./{}-]+\.(?:csv|jsonl|json))\b", block):
            before, tok = (m.group(1) or "").strip(), m.group(2)
            path = re.sub(r"\$(\w+)", lambda v: names.get(v.group(1), v.group(0)), tok)
            if before in ("-o", "--output", "--out") or path.startswith(("runs/", "results/", "build/", "path/to/")):
                continue
            if not os.path.exists(os.path.join(h.src, path)):
                missing.add(tok)
    return sorted(missing)


def git(cwd, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


def scratch_repo(tmp, jobs):
    """tmp as a git repository of the checkout's tracked jobs/, results/, tests/fixtures/
    and .gitignore,
    with each of `jobs` the demo job under its name, committed."""
    listed = git(h.src, "ls-files", "-z", "jobs", "results", "tests/fixtures", ".gitignore").stdout.split("\0")
    for f in filter(None, listed):
        os.makedirs(os.path.dirname(os.path.join(tmp, f)) or tmp, exist_ok=True)
        shutil.copy2(os.path.join(h.src, f), os.path.join(tmp, f))
    demo = json.load(open(os.path.join(h.src, "jobs", "demo.json")))
    for name in jobs - {"demo"}:
        with open(os.path.join(tmp, "jobs", f"{name}.json"), "w") as f:
            json.dump(dict(demo, name=name, store=f"../results/{name}/plans.h5"), f, indent=2)
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "scratch")):
        r = git(tmp, *args)
        if not h.check(f"scratch repository: git {args[0]}", r.returncode == 0, r.stderr):
            h.finish()


def main():
    cmds, where, missing, last = [], {}, [], 0
    for page in pages():
        text = open(os.path.join(h.src, page)).read()
        more, end = blocks(text, last)
        cmds += more
        where.update({b: page for b in range(last + 1, end + 1)})
        last = end
        missing += [f"{page}: {tok}" for tok in unshipped_inputs(text)]
    nblocks = len({b for b, _ in cmds})
    print("pages:", ", ".join(f"{p} ({list(where.values()).count(p)} runnable)" for p in pages()))
    in_readme = list(where.values()).count("README.md")
    h.check(f"README.md has runnable blocks ({in_readme})", in_readme >= 2,
            f"want a `{MARK}` line before at least two ```sh blocks")
    h.check(f"the pages have runnable blocks ({nblocks}, {len(cmds)} commands)", nblocks >= 2)
    h.check("every input file the pages' shell blocks name is shipped (or an output, or a placeholder)",
            not missing, str(missing))
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    with tempfile.TemporaryDirectory() as tmp:
        scratch_repo(tmp, {j for _, c in cmds for j in re.findall(r"\bjobs/([\w.-]+)\.json\b", c)})
        for block, cmd in cmds:
            run = on_demo(cmd, h.enpu, os.path.dirname(h.enpu), os.path.join(h.src, "Makefile"))
            r = subprocess.run(["bash", "-c", run], cwd=tmp, env=env, capture_output=True, text=True)
            print(f"---- block {block} ({where[block]}): {cmd}\n     as: {run}\n" + "\n".join(
                "     | " + line for line in (r.stdout + r.stderr).splitlines()[-6:]))
            h.check(f"block {block} ({where[block]}): `{cmd[:90]}` exits 0", r.returncode == 0,
                    f"exit {r.returncode}: {r.stderr[-800:]}")
        h.check("the blocks farmed the job's store in the scratch directory",
                any(os.path.exists(os.path.join(tmp, "results", j, "plans.h5")) for j in os.listdir(
                    os.path.join(tmp, "results"))))
        st = git(tmp, "status", "--porcelain")
        h.check("after the blocks `git status --porcelain` is empty (no tracked file written)",
                st.returncode == 0 and st.stdout == "", st.stdout[:800] + st.stderr)
    h.finish()


main()
