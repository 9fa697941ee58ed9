#!/usr/bin/python3
"""The report's figures say what they show: on the demo job's store and a replay of the
shipped trace, `enpu report` leaves no gnuplot warning (gnuplot.log absent or without
"Warning", e.g. "empty y range" of a flat SLO series); each SLO-attainment panel of
replay_energy.gp sets its own y range, and one where every window is at 100 % says so
in its title instead of drawing a flat line on gnuplot's 99..101 % axis; no two series
of seq_<phase>.dat are equal column for column (series that lie on top of each other
are drawn once, labelled "(identical)" with every slack they stand for); and report.md
defines every breakdown component, "other" included.

Usage: /usr/bin/python3 test_figure_labels.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR
"""
import glob
import json
import os
import re
import sys
import tempfile

from harness import Harness

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
os.environ["HDF5_PLUGIN_PATH"] = os.path.abspath(sys.argv[3])
JOBS = os.path.join(h.src, "jobs")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        j = json.load(open(os.path.join(JOBS, "demo.json")))
        for k in ("model", "chip", "cluster"):
            j[k] = os.path.join(JOBS, j[k])
        j["store"] = os.path.join(tmp, "plans.h5")
        j.pop("validation", None)
        job = os.path.join(tmp, "job.json")
        json.dump(j, open(job, "w"))
        r = h.run("farm", job, "--quiet", "--results", os.path.join(tmp, "res"))
        if not h.check("the demo job is farmed", r.returncode == 0, r.stderr[-400:]):
            h.finish()
        rp, out = os.path.join(tmp, "replay"), os.path.join(tmp, "report")
        r = h.run("replay", "--store", j["store"], "--cluster", j["cluster"], "--trace",
                  os.path.join(JOBS, "traces", "AzureLLMInferenceTrace_conv.csv"), "--out", rp)
        h.check("the trace is replayed", r.returncode == 0, r.stderr[-400:])
        r = h.run("report", j["store"], "--replay", rp, "--job", job, "--out", out)
        h.check("the report is written", r.returncode == 0, r.stderr[-400:])
        log = os.path.join(out, "gnuplot.log")
        text = open(log).read() if os.path.exists(log) else ""
        h.check("no gnuplot warning (no 'empty y range')", "Warning" not in text, text[:400])
        gp = open(os.path.join(out, "replay_energy.gp")).read()
        panels = re.findall(r"((?:set yrange \[[^\]]*\]\n)?)set title '([^']*SLO attainment[^']*)'", gp)
        h.check("each SLO-attainment panel sets its y range; a flat 100 % panel says so in its title",
                panels and all(rng and ("100 % in every window" in title) == ("[0:105]" in rng)
                               for rng, title in panels), str(panels))
        for dat in glob.glob(os.path.join(out, "seq_*.dat")):
            rows = [line.split() for line in open(dat) if line.strip() and not line.startswith("#")]
            cols = list(zip(*rows))[1:]
            stem = os.path.basename(dat)[:-4]
            titles = re.findall(r"using [^\n]* title '([^']*)'", open(os.path.join(out, stem + ".gp")).read())
            h.check(f"{stem}: no two series equal point for point; merged ones say '(identical)'",
                    len(set(cols)) == len(cols) and len(titles) == len(cols)
                    and all(("," in t) == t.endswith("(identical)") for t in titles), f"{titles} {cols}")
        md = open(os.path.join(out, "report.md")).read()
        h.check("report.md defines the breakdown's components, 'other' and FE included",
                "`other` is the rest of the chip" in md and "other_static_w" in md and "FE, the front end" in md)
    h.finish()


main()
