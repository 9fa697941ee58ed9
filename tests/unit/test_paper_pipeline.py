#!/usr/bin/python3
"""test_paper_pipeline.py — the paper pipeline's pieces (src/paper/enpu_paper), each
alone: the runs a model's job gives (request-only policies off the grid, the single
request's buckets, a sensitivity's runs), the manifest built from them checked against
schemas/paper-manifest.schema.json (a wrong document refused and not written), and a
stage that runs once, is skipped while its key holds and runs again when an input
changes. (The whole pipeline on the quick grid: tests/integration/test_paper.py.)

Usage: /usr/bin/python3 test_paper_pipeline.py SOURCE_ROOT"""
import argparse
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src", "paper"))

from enpu_paper import inputs, manifest, runner  # noqa: E402  (after the path it is found on)

QUICK = os.path.join(ROOT, "jobs", "paper", "quick", "pipeline.json")


def quick_runs():
    pipe = inputs.load_pipeline(QUICK)
    job_file = inputs.resolve(pipe["_dir"], pipe["models"][0])
    job, runs = inputs.derive_runs(pipe, job_file)
    return pipe, job_file, job, runs


class Runs(unittest.TestCase):
    def test_runs_per_budget_and_variant(self):
        pipe, _, _, runs = quick_runs()
        names = [r[0] for r in runs]
        self.assertEqual(names, ["grid-strict", "request-strict", "grid-paper", "request-paper",
                                 "request-paper-artifact-ivr"])
        self.assertEqual([r[3] for r in runs], [None] * 4 + ["artifact-ivr"])

    def test_request_only_policies_stay_off_the_grid(self):
        pipe, _, job, runs = quick_runs()
        grid = runs[0][4]["policies"]
        request = runs[1][4]["policies"]
        self.assertEqual(request, job["policies"])
        for entry in grid:
            for name in inputs.policy_names(entry):
                self.assertNotIn(name, ("dvfs-c", "ideal"), "a request-only policy was put on the grid")
        self.assertLess(len(grid), len(request))

    def test_request_runs_are_the_single_request(self):
        pipe, _, _, runs = quick_runs()
        phases = runs[1][4]["phases"]
        self.assertEqual(phases["prefill"], {"batch": [1], "seq": [4096]})
        self.assertEqual(phases["decode"], {"batch": [1], "seq": [4608]})

    def test_variant_keeps_its_policies_only(self):
        _, _, _, runs = quick_runs()
        names = {n for p in runs[4][4]["policies"] for n in inputs.policy_names(p)}
        self.assertEqual(names, {"nodvfs", "dvfs-c-walk", "enpu-all"})

    def test_policy_names_of_a_shadow_entry(self):
        self.assertEqual(inputs.policy_names({"policy": "enpu-all", "shadow": [4, 8]}),
                         ["enpu-all@shadow=4", "enpu-all@shadow=8"])
        self.assertEqual(inputs.policy_names("nodvfs"), ["nodvfs"])


def empty_entries():
    return {"compile": [], "graph": [], "figure20": None, "replays": [], "decompose": []}


class Manifest(unittest.TestCase):
    def test_built_manifest_matches_the_schema(self):
        pipe, job_file, _, runs = quick_runs()
        doc = manifest.build("llama3-70b", "../job.json", pipe, runs, empty_entries())
        self.assertEqual(manifest.problems(doc), [])
        self.assertEqual(list(doc), ["model", "job", "request", "table7", "runs", "compile", "graph", "figure20",
                                     "replays", "decompose", "timings"])

    def test_shipped_manifests_match_the_schema(self):
        for model in sorted(os.listdir(os.path.join(ROOT, "results", "paper"))):
            path = os.path.join(ROOT, "results", "paper", model, "manifest.json")
            if os.path.exists(path):
                with open(path) as f:
                    self.assertEqual(manifest.problems(json.load(f)), [], path)

    def test_a_wrong_manifest_is_refused_and_not_written(self):
        pipe, _, _, runs = quick_runs()
        entries = empty_entries()
        entries["graph"] = [{"phase": "prefill", "seq": 0, "file": "graph/prefill-0.json"}]
        doc = manifest.build("m", "../job.json", pipe, runs, entries)
        self.assertTrue(manifest.problems(doc)[0].startswith("$.graph[0].seq"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "manifest.json")
            with self.assertRaises(inputs.Failure) as caught:
                manifest.write(path, doc)
            self.assertIn("$.graph[0].seq", str(caught.exception))
            self.assertFalse(os.path.exists(path))


class Stage(unittest.TestCase):
    def test_stage_skipped_while_its_key_holds(self):
        with tempfile.TemporaryDirectory() as d:
            enpu = os.path.join(d, "enpu")
            with open(enpu, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(enpu, 0o755)
            src, out = os.path.join(d, "input.txt"), os.path.join(d, "model", "out.txt")
            with open(src, "w") as f:
                f.write("one\n")
            rn = runner.Runner(argparse.Namespace(enpu=enpu, launcher="none", np=1), d)
            mdir = os.path.join(d, "model")
            cmd = [["/bin/cat", src]]
            self.assertTrue(rn.stage(mdir, "copy", cmd, files=[src], outputs=[out], stdout_to=[out]))
            with open(out) as f:
                self.assertEqual(f.read(), "one\n")
            self.assertFalse(rn.stage(mdir, "copy", cmd, files=[src], outputs=[out], stdout_to=[out]))
            with open(src, "w") as f:
                f.write("two, longer\n")
            self.assertTrue(rn.stage(mdir, "copy", cmd, files=[src], outputs=[out], stdout_to=[out]))
            with open(out) as f:
                self.assertEqual(f.read(), "two, longer\n")
            with open(os.path.join(mdir, "timings.json")) as f:
                self.assertIn("copy", json.load(f))


if __name__ == "__main__":
    unittest.main(verbosity=1)
