#!/usr/bin/python3
"""commands_table.py — the command table of docs/commands.md, generated from the option tables the
commands parse with (`make commands-table`, integration_commands_table).

Usage: tools/commands_table.py [--check] [--enpu BIN] [ROOT]

The table between docs/commands.md's `<!-- commands table -->` and `<!-- end of commands table
-->` markers is what `enpu --help --markdown` prints: one row per command and sub-command,
its synopsis built from the option table it parses with (so an option `--help` lists is
in the table) and the first sentence of its section of src/cli/commands.md. Without
--check the page is rewritten; with --check nothing is written, the first differing row
is printed and the exit status is 1 when the table is stale.
"""
import argparse
import difflib
import pathlib
import subprocess
import sys

BEGIN, END = "<!-- commands table -->\n", "<!-- end of commands table -->\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--enpu", default=None, help="the enpu binary (default: ROOT/build/enpu)")
    ap.add_argument("root", nargs="?", default=pathlib.Path(__file__).resolve().parent.parent)
    a = ap.parse_args()
    root = pathlib.Path(a.root)
    enpu = a.enpu or str(root / "build" / "enpu")
    table = subprocess.run([enpu, "--help", "--markdown"], capture_output=True, text=True, check=True).stdout
    readme = root / "docs" / "commands.md"
    text = readme.read_text()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"{readme}: expected one {BEGIN.strip()} ... {END.strip()} pair")
    head, rest = text.split(BEGIN)
    old, tail = rest.split(END)
    if not a.check:
        readme.write_text(head + BEGIN + table + END + tail)
        return 0
    if old == table:
        print(f"{readme}: the command table equals `enpu --help --markdown`")
        return 0
    diff = difflib.unified_diff(old.splitlines(), table.splitlines(), "docs/commands.md", "enpu --help --markdown",
                                lineterm="", n=0)
    print("\n".join(diff))
    print(f"{readme}: the command table is stale; run `make commands-table`", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
