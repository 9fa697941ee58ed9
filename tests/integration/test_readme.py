#!/usr/bin/python3
"""The README's runnable shell blocks run as written, on the demo job.

Usage: /usr/bin/python3 test_readme.py ENPU_BINARY SOURCE_DIR

A block is runnable when the line before its ```sh fence is `<!-- runnable -->`. Each of
its commands (a line, with `\\` continuations, without its trailing `# comment`) runs
with bash, in order, in a scratch directory holding a copy of jobs/, with
- every `jobs/<job>.json` replaced by `jobs/demo.json` and `results/<job>/` by
  `results/demo/` (the blocks show the full jobs; the demo is the same command, small);
- `build/enpu` replaced by the binary under test, and `make TARGET` by this checkout's
  Makefile on that binary's build directory without rebuilding it (`make -o build`);
and must exit 0. The README's shell is the user's: no Open MPI variable is added here, so
a block that needs one (root, more ranks than cores) must say it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Harness

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
MARK = "<!-- runnable -->"


def blocks(readme):
    """The commands of every runnable block, as (block number, command) in order."""
    lines = readme.splitlines()
    out, block = [], 0
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
    return out


def on_demo(cmd, enpu, build_dir, makefile):
    cmd = re.sub(r"\bjobs/[\w.-]+\.json\b", "jobs/demo.json", cmd)
    cmd = re.sub(r"\bresults/[\w.-]+/", "results/demo/", cmd)
    cmd = re.sub(r"(?<![\w/])build/enpu\b", enpu, cmd)
    return re.sub(r"(?<![\w/-])make ", f"make -f {makefile} -o build -o deps BUILD={build_dir} ", cmd)


def main():
    readme = open(os.path.join(h.src, "README.md")).read()
    cmds = blocks(readme)
    nblocks = len({b for b, _ in cmds})
    h.check(f"README.md has runnable blocks ({nblocks}, {len(cmds)} commands)", nblocks >= 2,
            f"want a `{MARK}` line before at least two ```sh blocks")
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(os.path.join(h.src, "jobs"), os.path.join(tmp, "jobs"))
        for block, cmd in cmds:
            run = on_demo(cmd, h.enpu, os.path.dirname(h.enpu), os.path.join(h.src, "Makefile"))
            r = subprocess.run(["bash", "-c", run], cwd=tmp, env=env, capture_output=True, text=True)
            print(f"---- block {block}: {cmd}\n     as: {run}\n" + "\n".join(
                "     | " + line for line in (r.stdout + r.stderr).splitlines()[-6:]))
            h.check(f"block {block}: `{cmd[:90]}` exits 0", r.returncode == 0,
                    f"exit {r.returncode}: {r.stderr[-800:]}")
        h.check("the blocks farmed the demo job's store in the scratch directory",
                os.path.exists(os.path.join(tmp, "results", "demo", "plans.h5")))
    h.finish()


main()
