#!/usr/bin/python3
"""figcheck.py — the legibility rules every figure the report writes must keep, checked
on its gnuplot script (<name>.gp beside <name>.dat and <name>.png).

Usage: tools/figcheck.py [--gnuplot BIN] PATH...   (a .gp file or a directory, searched
                                                     recursively for *.gp)

Per panel (each plot command; a multiplot has several):
  series    at most 8 series in the key, and at most 16 plot elements (a series may have
            one untitled band or marker of its own);
  drawn     at most 8 series drawn, titled or not: every plot element counts (a line, its
            band, an error bar) but the reference annotations drawn over the data (a black
            marker, `lc rgb 'black'`, and a text, `with labels`), so a panel whose key is
            short cannot still crowd 9 or more lines and bands;
  key       with more than one series, the key is outside the plot area (outside,
            above, below, a margin, at screen coordinates the layout leaves free, or unset);
  width     the plot area is at least half the panel's width (the canvas width over the
            multiplot layout's columns), so an outside key does not squeeze the plot;
  units     the y axis label names a unit in parentheses, and so does the x axis label
            unless the x axis is labelled by category (xtic() from the data);
  ticks     no two labels of a row of text overlap, where gnuplot put them: the script
            is drawn again with gnuplot's svg terminal at the same size and font, and each
            text's extent is its position from gnuplot, its anchor and its length at the
            font size (0.6 em per character, generous for sans); rotated tick labels must
            be at least 1.1 em apart across their direction;
  warnings  gnuplot warns of nothing while drawing the PNG (e.g. "difficulty fitting plot
            titles into key": the key then lies over the plot), but of the data (the empty
            range of a flat line, a series without a point).
Per figure, the paper's values:
  paper     a figure of the report that the paper states values for (savings_<phase>:
            Figure 11, shadow: 15, granularity_<phase>: 16, domains_<phase>: 17,
            gating_<phase>: 21, figure20: 20) says what it shows in a "# paper values:
            FILE figure F phase P model M policies A,B" line, and carries a key entry
            (or a text beside the marker) "paper §x.y: ..." for the section of every claim of FILE (the paper's stated
            numbers) that belongs there: its figure, a kind the figure plots, its one
            policy (and a gain's base) among the figure's, its phase and models (when it
            names them) the figure's; and no "paper §" entry that no such claim explains.
            Checked here from FILE, not from what the report decided to draw.
Exit status: 0 every figure keeps every rule; 1 a rule is broken (each is printed as
"file: panel N: what"); 2 bad usage or a script gnuplot cannot draw.
"""
import argparse
import html
import json
import math
import os
import re
import subprocess
import sys
import tempfile

MAX_SERIES = 8
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The report's figures the paper states values for: stem (before _<phase>) -> figure, and
# the kinds of claim each plots.
PAPER_FIGURES = {"savings": "11", "shadow": "15", "granularity": "16", "domains": "17", "gating": "21",
                 "figure20": "20"}
PAPER_KINDS = {"11": {"savings"}, "15": {"slowdown"}, "16": {"savings", "gain"}, "17": {"savings", "gain"},
               "21": {"savings", "gain"}, "20": {"figure20"}}
CONTEXT = re.compile(r"#\s*paper values:\s*(\S+)\s+figure\s+(\S+)\s+phase\s+(\S+)\s+model\s+(\S+)"
                     r"\s+policies\s+(\S*)")
EM = 0.6  # character width in em for the text extent estimate
MARK = "ENPU_FIGCHECK"
# Warnings about the data, not the layout: a flat line's range is widened, a series with
# no point in a window (a governor that never speculates) draws nothing.
DATA_WARNINGS = ("empty", "no valid points")


def commands(text):
    """The script's commands, continuation lines joined."""
    out, cur = [], ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def split_top(s, sep=","):
    """s split at `sep` outside quotes, parentheses and brackets."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in s:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return parts


def label_text(cmd):
    m = re.match(r"\s*set\s+[xy]label\s+(['\"])(.*?)\1", cmd)
    return m.group(2) if m else ""


def is_plot(cmd):
    return re.match(r"\s*(plot|splot)\b", cmd) is not None


def text_checks(path, cmds):
    """Series, key and units per plot command. @return (problems, number of panels)."""
    problems, panel = [], 0
    key_outside, xlabel, ylabel = False, "", ""
    for cmd in cmds:
        c = cmd.strip()
        if re.match(r"set\s+key\b", c):
            words = c.split()
            if "inside" in words:
                key_outside = False
            elif any(w in words for w in ("outside", "above", "below", "over", "under", "tmargin", "bmargin",
                                          "lmargin", "rmargin", "screen")):  # at screen: on the canvas
                key_outside = True
            elif not any(w in words for w in ("font", "spacing", "samplen", "width", "height", "box", "nobox",
                                              "noautotitle", "autotitle", "maxrows", "maxcols", "reverse",
                                              "noreverse", "Left", "Right", "vertical", "horizontal", "opaque")):
                key_outside = False  # a bare position (top left, ...) is inside
        elif re.match(r"unset\s+key\b", c):
            key_outside = True
        elif re.match(r"set\s+xlabel\b", c):
            xlabel = label_text(c)
        elif re.match(r"set\s+ylabel\b", c):
            ylabel = label_text(c)
        elif re.match(r"unset\s+xlabel\b", c):
            xlabel = ""
        elif re.match(r"unset\s+ylabel\b", c):
            ylabel = ""
        elif is_plot(c):
            panel += 1
            elems = split_top(re.sub(r"^\s*s?plot\s*", "", c))
            titled = [e for e in elems if "notitle" not in e and not re.search(r"\bt(itle)?\s+(''|\"\")", e)]
            where = f"{path}: panel {panel}"
            if len(titled) > MAX_SERIES or len(elems) > 2 * MAX_SERIES:
                problems.append(f"{where}: {len(titled)} series in the key, {len(elems)} plot elements "
                                f"(at most {MAX_SERIES} series, each with at most one untitled band or marker)")
            drawn = [e for e in elems if "lc rgb 'black'" not in e and not re.search(r"\bwith\s+labels\b", e)]
            if len(drawn) > MAX_SERIES:
                problems.append(f"{where}: {len(drawn)} series drawn (at most {MAX_SERIES}, bands included; "
                                "split the panel)")
            if len(titled) > 1 and not key_outside:
                problems.append(f"{where}: the key is inside the plot area")
            if not re.search(r"\(.+\)", ylabel):
                problems.append(f"{where}: the y axis label '{ylabel}' names no unit")
            if "xtic(" not in c and "xticlabels(" not in c and not re.search(r"\(.+\)", xlabel):
                problems.append(f"{where}: the x axis label '{xlabel}' names no unit")
    return problems, panel


def redirected(cmds, output, svg):
    """The script drawn to `output` (as svg, or with its own terminal), printing each
    panel's plot area in pixels."""
    out, size = [], (640, 480)
    for cmd in cmds:
        c = cmd.strip()
        m = re.match(r"set\s+terminal\s+\S+\s+size\s+(\d+)\s*,\s*(\d+)(.*)", c)
        if m and svg:
            size = (int(m.group(1)), int(m.group(2)))
            font = re.search(r"font\s+('[^']*'|\"[^\"]*\")", m.group(3))
            out.append(f"set terminal svg size {size[0]},{size[1]} noenhanced" + (f" font {font.group(1)}" if font else ""))
            continue
        if m:
            size = (int(m.group(1)), int(m.group(2)))
        if re.match(r"set\s+output\b", c):
            out.append(f"set output '{output}'")
            continue
        out.append(cmd)
        if is_plot(c):
            out.append(f"print sprintf('{MARK} %d %d', GPVAL_TERM_XMIN, GPVAL_TERM_XMAX)")
    return "\n".join(out) + "\n", size


TEXT = re.compile(r'<g transform="translate\(([-\d.]+),([-\d.]+)\)(?:\s*rotate\(([-\d.]+)\))?"[^>]*?'
                  r'font-size="([\d.]+)"[^>]*?text-anchor="(\w+)"\s*>\s*<text>(.*?)</text>', re.S)


def texts(svg_text):
    out = []
    for m in TEXT.finditer(svg_text):
        s = html.unescape(re.sub(r"<[^>]+>", "", m.group(6))).strip()
        if s:
            out.append((float(m.group(1)), float(m.group(2)), float(m.group(3) or 0), float(m.group(4)),
                        m.group(5), s))
    return out


def overlaps(path, items, scale):
    """Rows of horizontal text whose extents overlap; rotated labels closer than 1.1 em.
    scale: the PNG's plot width over the svg's (the svg terminal estimates text widths
    where pngcairo measures them, so its plots are wider; positions are scaled to the
    PNG's, text extents are not)."""
    problems, rows = [], {}
    for x, y, rot, fs, anchor, s in items:
        rows.setdefault((round(y * 2) / 2, rot), []).append((x * scale, fs, anchor, s))
    for (y, rot), row in rows.items():
        row.sort()
        for (x0, f0, a0, s0), (x1, f1, a1, s1) in zip(row, row[1:]):
            if rot == 0:
                def extent(x, f, a, s):
                    w = len(s) * f * EM
                    return {"start": (x, x + w), "middle": (x - w / 2, x + w / 2), "end": (x - w, x)}[a]
                if extent(x0, f0, a0, s0)[1] > extent(x1, f1, a1, s1)[0] + 1:
                    problems.append(f"{path}: labels '{s0}' and '{s1}' overlap at y={y:g} px")
            elif (x1 - x0) * abs(math.sin(math.radians(rot))) < 1.1 * max(f0, f1):
                problems.append(f"{path}: rotated labels '{s0}' and '{s1}' are {x1 - x0:.1f} px apart")
    return problems


def section(cite):
    """A claim's most specific section: the first "§4.x" of its citation, else its first."""
    i = cite.find("§4.")
    s = cite[i:] if i >= 0 else cite
    s = s.split(";")[0]
    return s.split(" ('")[0].strip()


NUMBERS = {}


def numbers(path):
    """The claims of a numbers file (a relative path: from here, else from the repository)."""
    if not os.path.isabs(path) and not os.path.exists(path):
        path = os.path.join(ROOT, path)
    if path not in NUMBERS:
        try:
            NUMBERS[path] = json.load(open(path))["claims"]
        except (OSError, ValueError, KeyError) as e:
            raise RuntimeError(f"{path}: cannot read the paper's numbers: {e}")
    return NUMBERS[path]


def applies(cl, fig, phase, model, policies):
    q = cl["ours"]
    pol = q.get("policy")
    pols = pol if isinstance(pol, list) else [pol]
    if cl["figure"] != fig or q["kind"] not in PAPER_KINDS[fig] or len(pols) != 1 or pols[0] not in policies:
        return False
    if q.get("models") and model not in q["models"]:
        return False
    if q.get("phase") and phase != "both" and q["phase"] != phase:
        return False
    if q["kind"] == "gain" and (q.get("slack") == "max" or q.get("base") not in policies or fig == "11"):
        return False
    return q["kind"] != "figure20" or q.get("metric") in ("worst", "loss")


def paper_checks(path, text):
    """The paper's values the figure must carry (and no others)."""
    stem = os.path.basename(path)[:-3]
    known = PAPER_FIGURES.get(re.sub(r"_(prefill|decode)$", "", stem))
    m = CONTEXT.search(text)
    if not m:
        return [f"{path}: Figure {known} of the paper states values but the script has no '# paper values:' "
                "line (drawn without the paper's numbers?)"] if known else []
    file, fig, phase, model, pols = m.groups()
    if fig not in PAPER_KINDS:
        return [f"{path}: '# paper values:' names figure {fig}, which is no figure of the report's"]
    want = {}
    for cl in numbers(file):
        if applies(cl, fig, phase, model, pols.split(",")):
            want.setdefault(section(cl["cite"]), []).append(cl["id"])
    have = set(re.findall(r"['\"]\s*paper (§[^:'\"]*):", text))  # a key entry, or a text beside the marker
    problems = [f"{path}: the paper's value of {', '.join(ids)} ({sec}) is not drawn (no key entry 'paper {sec}: ...')"
                for sec, ids in sorted(want.items()) if sec not in have]
    problems += [f"{path}: a key entry 'paper {sec}: ...' that no claim of {file} puts on figure {fig}"
                 for sec in sorted(have - set(want))]
    return problems


def draw_alone(path, script, gnuplot, tmp, kind):
    """One pass in a gnuplot of its own: its stdout and stderr (a script gnuplot cannot
    draw raises, naming the figure)."""
    gp = os.path.join(tmp, kind + ".gp")
    with open(gp, "w") as f:
        f.write(script)
    p = subprocess.run([gnuplot, gp], cwd=os.path.dirname(os.path.abspath(path)), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{path}: gnuplot cannot draw it: {p.stderr.strip()[:300]}")
    return p.stdout + p.stderr


def draw_batch(jobs, gnuplot, tmp, kind):
    """Every figure's `kind` pass in one gnuplot, each from its own directory and from a
    fresh session: a gnuplot's start (exec, dynamic linking, fonts) was more than half
    the CPU of a figure drawn alone (the 411 committed figures: 44 s of CPU one gnuplot
    each, 18 s in two). Each figure's output is what gnuplot printed between its marks, or
    None for all when the batch fails (the figures are then drawn alone, which names the
    one gnuplot cannot draw)."""
    parts = []
    for i, (path, script) in enumerate(jobs):
        d = os.path.dirname(os.path.abspath(path)).replace("'", "''")  # '' is a quote inside '...'
        parts.append(f"print '{MARK}_FIGURE {i}'\ncd '{d}'\n{script}unset multiplot\nunset output\nreset session\n")
    gp = os.path.join(tmp, f"batch-{kind}.gp")
    with open(gp, "w") as f:
        f.write("".join(parts))
    p = subprocess.run([gnuplot, gp], cwd=tmp, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    out, cur = [[] for _ in jobs], None
    for line in (p.stdout + p.stderr).splitlines():
        if line.startswith(MARK + "_FIGURE "):
            cur = int(line.split()[1])
        elif cur is not None:
            out[cur].append(line)
    return ["\n".join(o) for o in out]


def prepare(path):
    """The checks on the script's text, and what the drawing passes need."""
    text = open(path).read()
    cmds = commands(text)
    problems, npanels = text_checks(path, cmds)
    problems += paper_checks(path, text)
    cols = 1
    for c in cmds:
        m = re.match(r"\s*set\s+multiplot\s+layout\s+(\d+)\s*,\s*(\d+)", c)
        if m:
            cols = int(m.group(2))
    return problems, cmds, cols


def drawn_checks(path, cols, size, printed, svg_path):
    """The rules read from the drawings: gnuplot's warnings while drawing the PNG, each
    panel's plot width, and the labels' overlaps in the svg."""
    problems = [f"{path}: gnuplot: {l.strip()}" for l in printed["png"].splitlines()
                if "arning" in l and not any(w in l for w in DATA_WARNINGS)]
    areas = {kind: [tuple(map(int, l.split()[1:])) for l in printed[kind].splitlines() if l.startswith(MARK + " ")]
             for kind in ("png", "svg")}
    for i, (x0, x1) in enumerate(areas["png"]):
        share = size[0] / cols
        if x1 - x0 < 0.5 * share:
            problems.append(f"{path}: panel {i + 1}: the plot is {x1 - x0} px of the panel's {share:.0f} px "
                            "(less than half)")
    ratios = [(p1 - p0) / (s1 - s0) for (p0, p1), (s0, s1) in zip(areas["png"], areas["svg"]) if s1 > s0]
    return problems + overlaps(path, texts(open(svg_path).read()), min(ratios + [1.0]))


def check_all(files, gnuplot):
    """Every figure's problems: the PNG passes in one gnuplot and the svg passes in
    another when they all draw, else each figure alone."""
    with tempfile.TemporaryDirectory() as tmp:
        prepared = [prepare(f) for f in files]
        outputs = {kind: [os.path.join(tmp, f"figure{i}.{kind}") for i in range(len(files))]
                   for kind in ("png", "svg")}
        scripts = {kind: [redirected(cmds, outputs[kind][i], kind == "svg") for i, (_, cmds, _) in enumerate(prepared)]
                   for kind in ("png", "svg")}
        printed = {kind: draw_batch([(f, scripts[kind][i][0]) for i, f in enumerate(files)], gnuplot, tmp, kind)
                   for kind in ("png", "svg")}
        problems = []
        for i, (f, (text_problems, _, cols)) in enumerate(zip(files, prepared)):
            got = {}
            for kind in ("png", "svg"):
                got[kind] = printed[kind][i] if printed[kind] is not None else \
                    draw_alone(f, scripts[kind][i][0], gnuplot, tmp, kind)
                if not os.path.exists(outputs[kind][i]):
                    raise RuntimeError(f"{f}: gnuplot cannot draw it: no {kind} output")
            problems += text_problems + drawn_checks(f, cols, scripts["png"][i][1], got, outputs["svg"][i])
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gnuplot", default="gnuplot")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            for d, _, names in os.walk(p):
                files += [os.path.join(d, n) for n in names if n.endswith(".gp")]
        elif p.endswith(".gp") and os.path.isfile(p):
            files.append(p)
        else:
            print(f"figcheck: {p}: not a .gp file or a directory", file=sys.stderr)
            return 2
    if not files:
        print("figcheck: no .gp file found", file=sys.stderr)
        return 2
    try:
        problems = check_all(sorted(files), args.gnuplot)
    except RuntimeError as e:
        print(f"figcheck: {e}", file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    print(f"figcheck: {len(files)} figures, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
