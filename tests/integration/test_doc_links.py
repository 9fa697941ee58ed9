#!/usr/bin/python3
"""The README's and docs/ pages' relative links and anchors resolve, the README stays at
most 250 lines and links every docs/ page (tools/doc_links.py).

Usage: /usr/bin/python3 test_doc_links.py ENPU_BINARY SOURCE_DIR

1. tools/doc_links.py passes on this checkout.
2. On a copy of the pages, each rule fails when broken, naming the offence: a link to a
   missing file, an anchor no heading makes, a README over 250 lines, a docs/ page the
   README does not link, a test file a page names that tests/ lacks; a repeated heading's
   `-1` anchor and a link inside code pass.
"""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Harness

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
TOOL = os.path.join(h.src, "tools", "doc_links.py")


def run(root):
    return subprocess.run([sys.executable, TOOL, root], capture_output=True, text=True)


def copy(tmp):
    """A copy of the checkout in tmp without build trees, stores and the committed figures'
    images and data (30 MB the pages do not link)."""
    root = os.path.join(tmp, "root")
    shutil.copytree(h.src, root, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "build-*", "runs", "*.h5", "*.png", "*.svg", "*.dat", "*.csv"))
    return root


def edit(path, old, new):
    text = open(path).read()
    assert old in text, (path, old)
    open(path, "w").write(text.replace(old, new, 1))


r = run(h.src)
h.check("tools/doc_links.py passes on the checkout", r.returncode == 0, r.stdout[-2000:] + r.stderr)

with tempfile.TemporaryDirectory() as tmp:
    root = copy(tmp)
    readme = os.path.join(root, "README.md")
    page = os.path.join(root, "docs", "testing.md")
    original = open(readme).read(), open(page).read()

    edit(page, "[Failure semantics](store.md#failure-semantics)", "[Failure semantics](store.md#no-such-section)")
    r = run(root)
    h.check("an anchor no heading makes fails, named", r.returncode == 1 and "#no-such-section" in r.stdout,
            r.stdout[-1000:])

    open(page, "w").write(original[1])
    edit(page, "[Failure semantics](store.md#failure-semantics)", "[Failure semantics](gone.md)")
    r = run(root)
    h.check("a link to a missing file fails, named", r.returncode == 1 and "docs/gone.md does not exist" in r.stdout,
            r.stdout[-1000:])

    open(page, "w").write(original[1] + "\n## Tests\n\nAgain: [the first](#tests-1), `[code](nowhere.md)`.\n"
                          "\n```\n[in a block](nowhere.md)\n```\n")
    r = run(root)
    h.check("a repeated heading's -1 anchor and links inside code pass", r.returncode == 0, r.stdout[-1000:])

    open(page, "w").write(original[1])
    open(readme, "w").write(original[0] + "\n" * (251 - original[0].count("\n")))
    r = run(root)
    h.check("a README over 250 lines fails", r.returncode == 1 and "more than 250" in r.stdout, r.stdout[-1000:])

    open(readme, "w").write(original[0])
    store = os.path.join(root, "docs", "store.md")
    edit(store, "(`test_flock.py`)", "(`test_no_such_test.py`)")
    r = run(root)
    h.check("a test file a promise names that tests/ lacks fails, named",
            r.returncode == 1 and "names test_no_such_test.py" in r.stdout, r.stdout[-1000:])

    edit(store, "(`test_no_such_test.py`)", "(`test_flock.py`)")
    open(os.path.join(root, "docs", "orphan.md"), "w").write("# Orphan\n")
    r = run(root)
    h.check("a docs/ page the README does not link fails, named",
            r.returncode == 1 and "does not link docs/orphan.md" in r.stdout, r.stdout[-1000:])
h.finish()
