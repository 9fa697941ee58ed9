#!/usr/bin/python3
"""doc_links.py — the documentation's relative links resolve, and the README stays a front
door (integration_readme_links).

Usage: tools/doc_links.py [ROOT]

Over README.md, every docs/**/*.md, src/README.md and results/bench.md:
1. every relative Markdown link `[text](path)`, `[text](path#anchor)` or `[text](#anchor)`
   outside code names a file or directory of the checkout, and an anchor into a Markdown
   page names one of its headings (GitHub's slugs: lower case, punctuation but `-` and `_`
   dropped, spaces to `-`, a repeated heading `-1`, `-2`, ...) or an `<a id="...">`;
2. README.md has at most 250 lines;
3. README.md links every page of docs/ (docs/history/ may be reached through another page);
4. every test file the README and docs/ pages name as the check of a promise
   (`test_*.py`, `test_*.c`) exists under tests/ (the history, docs/history/, excepted).
Prints one line per offence and a final "N passed, M failed"; exits 1
on any failure.
"""
import pathlib
import re
import sys

README_MAX_LINES = 250

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")


def prose(text):
    """The text outside fenced blocks and inline code, line by line (code spans blanked)."""
    out, fence = [], None
    for line in text.splitlines():
        m = re.match(r"\s*(```+|~~~+)", line)
        if m and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)):
            fence = m.group(1) if fence is None else None
            out.append("")
            continue
        out.append("" if fence else re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return out


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text only
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text):
    """Every anchor of a Markdown page: its headings' slugs (repeats numbered) and the ids
    of its HTML anchors."""
    seen, out = {}, set()
    for line in prose(text):
        out.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line))
    fence = None
    for line in text.splitlines():
        m = re.match(r"\s*(```+|~~~+)", line)
        if m:
            fence = None if fence else m.group(1)
            continue
        h = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if h:
            base = slug(h.group(1))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def pages(root):
    docs = sorted(p for p in (root / "docs").glob("**/*.md"))
    extra = [root / "src" / "README.md", root / "results" / "bench.md"]
    return [root / "README.md"] + docs + [p for p in extra if p.exists()]


def check_links(root, page, fails):
    rel = page.relative_to(root)
    cache = {}
    for n, line in enumerate(prose(page.read_text()), 1):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page.resolve()
            name = dest.relative_to(root.resolve()).as_posix() if dest.is_relative_to(root.resolve()) else None
            where = f"{rel}:{n}: ({target})"
            if name is None:
                fails.append(f"{where} points outside the checkout")
            elif not dest.exists():
                fails.append(f"{where} {name} does not exist")
            elif anchor and dest.suffix == ".md":
                if dest not in cache:
                    cache[dest] = anchors(dest.read_text())
                if anchor not in cache[dest]:
                    fails.append(f"{where} {name} has no heading or anchor #{anchor}")


def check_test_names(root, fails):
    """Rule 4: the test files README.md and docs/ (but docs/history/) name exist under tests/."""
    tests = {p.name for p in (root / "tests").glob("**/test_*")}
    for page in pages(root):
        parts = page.relative_to(root).parts
        if parts[0] not in ("README.md", "docs") or "history" in parts:
            continue
        for n, line in enumerate(page.read_text().splitlines(), 1):
            for name in re.findall(r"\b(test_\w+\.(?:py|c))\b", line):
                if name not in tests:
                    fails.append(f"{page.relative_to(root)}:{n}: names {name}, which tests/ does not have")


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    fails, checked = [], 0
    for page in pages(root):
        before = len(fails)
        check_links(root, page, fails)
        checked += 1 if len(fails) == before else 0
    readme = (root / "README.md").read_text()
    lines = readme.count("\n")
    if lines > README_MAX_LINES:
        fails.append(f"README.md: {lines} lines, more than {README_MAX_LINES}: move a section into docs/")
    linked = {(root / t.partition("#")[0]).resolve() for line in prose(readme) for t in LINK.findall(line)}
    for page in sorted((root / "docs").glob("*.md")):
        if page.resolve() not in linked:
            fails.append(f"README.md does not link {page.relative_to(root)} (its map of the docs)")
    check_test_names(root, fails)
    for line in fails:
        print(line)
    print(f"{checked} pages' links resolve, README.md {lines} lines; {len(fails)} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
