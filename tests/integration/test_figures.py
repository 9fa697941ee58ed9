#!/usr/bin/python3
"""The figures' legibility rules (tools/figcheck.py): the checker catches each broken rule
on a small script made to break it (the paper's values too: one not drawn, one no claim
explains, a figure drawn without the numbers), passes a script that keeps them all, and every figure
committed under results/ keeps them (the report's own figures are checked where they are
drawn: test_report.py, test_governors.py, test_paper.py).

Usage: /usr/bin/python3 test_figures.py ENPU_BINARY SOURCE_DIR
"""
import os
import subprocess
import sys
import tempfile

from harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
CHECK = os.path.join(h.src, "tools", "figcheck.py")


def figcheck(*paths):
    return subprocess.run(["/usr/bin/python3", CHECK, *paths], capture_output=True, text=True)


HEAD = "set terminal pngcairo size {w},{h} noenhanced font 'sans,10'\nset output '{name}.png'\n"
GOOD = ("set xlabel 'SLO slack (%)'\nset ylabel 'energy saving (%)'\nset key outside right top\n"
        "plot 'd.dat' using 1:2 with lines title 'a', '' using 1:3 with lines title 'b'\n")
CASES = {
    # name: (size, body, the words of the problem it must report)
    "good": ((640, 400), GOOD, None),
    "series": ((960, 500), "set xlabel 'x (s)'\nset ylabel 'y (%)'\nset key outside right\nplot " +
               ", ".join(f"'d.dat' using 1:{2 + i % 2} with lines title 's{i}'" for i in range(9)) + "\n",
               "9 series in the key"),
    # 4 titled lines, each with an untitled band: a short key, 8 + 1 elements drawn
    "drawn": ((960, 500), "set xlabel 'x (s)'\nset ylabel 'y (%)'\nset key outside right\nplot " +
              ", ".join(f"'d.dat' using 1:2:3 with filledcurves notitle, '' using 1:{2 + i % 2} with lines title 's{i}'"
                        for i in range(4)) + ", '' using 1:3 with lines notitle\n",
              "9 series drawn"),
    "inside": ((640, 400), GOOD.replace("set key outside right top", "set key top left"), "key is inside"),
    "units": ((640, 400), GOOD.replace("energy saving (%)", "energy saving"), "names no unit"),
    "width": ((640, 400), GOOD.replace("title 'a'", "title '" + "a long policy name " * 2 + "(variant)'"),
              "less than half"),
    "crowded": ((640, 400), GOOD.replace("title 'a'", "title '" + "a very long policy name " * 3 + "'"),
                "difficulty fitting"),
    "ticks": ((640, 400), GOOD.replace("set key outside right top", "set key outside right top\n"
                                       "set xtics 1\nset format x '%.3f'"), "overlap"),
    "rotated": ((640, 400), GOOD.replace("set key outside right top", "set key outside right top\n"
                                         "set xtics 0.25 rotate by -45\nset format x '%.2f'"), "rotated labels"),
}

tmp = tempfile.mkdtemp(prefix="enpu-figcheck-")
with open(os.path.join(tmp, "d.dat"), "w") as f:
    f.writelines(f"{x} {x * 0.5} {30 - x}\n" for x in range(31))
for name, ((w, hgt), body, want) in CASES.items():
    gp = os.path.join(tmp, f"{name}.gp")
    with open(gp, "w") as f:
        f.write(HEAD.format(w=w, h=hgt, name=name) + body)
    p = figcheck(gp)
    if want is None:
        h.check(f"{name}: a script keeping every rule passes", p.returncode == 0, p.stdout + p.stderr)
    else:
        h.check(f"{name}: reported ({want!r}), exit 1", p.returncode == 1 and want in p.stdout, p.stdout + p.stderr)
# The paper's values: a Figure 11 script (savings_prefill.gp) of a llama3-70b store must
# carry §4 (1)'s enpu-all savings, and only claims of the numbers file.
NUMBERS = os.path.join(h.src, "jobs", "paper", "paper-numbers.json")
CTX = f"# paper values: {NUMBERS} figure 11 phase prefill model llama3-70b policies {{pols}}\n"
MARK = ", 'd.dat' index 0 every ::0::0 using (0):(16.9) with points title 'paper §4 (1): enpu-all, model mean'"
PLOT = "plot 'd.dat' using 1:2 with lines title 'nodvfs', '' using 1:3 with lines title 'enpu-all'"
PAPER = {
    "drawn": (CTX.format(pols="nodvfs,enpu-all"), MARK, None),
    "missing": (CTX.format(pols="nodvfs,enpu-all"), "", "is not drawn"),
    "unexplained": (CTX.format(pols="nodvfs,dvfs-c-walk"), MARK, "no claim"),
    "no context": ("", MARK, "no '# paper values:' line"),
}
for name, (ctx, mark, want) in PAPER.items():
    d = os.path.join(tmp, name.replace(" ", "-"))
    os.makedirs(d)
    with open(os.path.join(d, "d.dat"), "w") as f:
        f.writelines(f"{x} 0 {x * 0.5}\n" for x in range(31))
    gp = os.path.join(d, "savings_prefill.gp")
    with open(gp, "w") as f:
        f.write(HEAD.format(w=960, h=500, name="savings_prefill") + ctx + GOOD.split("plot")[0] + PLOT + mark + "\n")
    p = figcheck(gp)
    if want is None:
        h.check(f"paper values, {name}: passes", p.returncode == 0, p.stdout + p.stderr)
    else:
        h.check(f"paper values, {name}: reported ({want!r}), exit 1", p.returncode == 1 and want in p.stdout,
                p.stdout + p.stderr)

p = figcheck(os.path.join(tmp, "missing.gp"))
h.check("a path that is no .gp file: exit 2", p.returncode == 2, p.stderr)

results = os.path.join(h.src, "results")
h.figures_legible("committed results/", results)
h.finish()
