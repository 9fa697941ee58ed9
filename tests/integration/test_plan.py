#!/usr/bin/python3
"""test_plan.py — `enpu plan` end to end on a small published config (Llama-3.2-1B) and
the first 300 requests of the shipped Azure conversation trace, on a small grid (max
batch 4, 8 buckets per phase) under the real mpirun: from nothing to a validated store,
a replay of every policy and a report, each where it says; then the same command again,
which recomputes nothing (the farm has 0 tasks to do, the measured nodes, the replay and
the report are kept) and leaves job init's files as they were; then a changed SLO target,
which keeps the store's plans but replays again. A Ctrl-C (SIGINT to the process group)
during the farm, job init or the node sizing (between two of its replays too): exit 3,
and the same command resumes; Ctrl-\\ kills; a SIGINT ignored at start stays ignored.
Last, Mooncake's heavy-tailed trace, where the node rules under-provision and the nodes
measured on NoDVFS do not.

Usage: /usr/bin/python3 test_plan.py ENPU_BINARY SOURCE_DIR"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading

from harness import Harness
from farm_harness import wait_for

h = Harness(sys.argv[1], sys.argv[2])
SRC = h.src
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def plan(tmp, *extra):
    cmd = [h.enpu, "plan", os.path.join(SRC, "tests/fixtures/hf/llama3.2-1b.json"), "--trace",
           os.path.join(tmp, "trace.csv"), "--chip", os.path.join(SRC, "jobs/chips/tpuv5p.json"), "--np", "2",
           "--max-batch", "4", "--bucket-budget", "8", "--runs", os.path.join(tmp, "runs"), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp, timeout=600)


with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(SRC, "jobs/traces/AzureLLMInferenceTrace_conv.csv")) as f:
        lines = f.readlines()
    with open(os.path.join(tmp, "trace.csv"), "w") as f:
        f.writelines(lines[:301])
    run = os.path.join(tmp, "runs", "llama3.2-1b")
    outputs = ["job.json", "cluster.json", "model.json", "init.md", "plans.h5", "summary.md", "validation.md",
               "nodes/cluster.json", "nodes/sizing.md", "replay/summary.json", "report/report.md"]

    p = plan(tmp)
    out = p.stdout + p.stderr
    h.check("first run: exit 0", p.returncode == 0, out[-3000:])
    for name in outputs:
        h.check(f"first run: {name} written", os.path.exists(os.path.join(run, name)))
        h.check(f"first run: says where {name} is", os.path.join(run, name.split("/")[0]) in p.stdout, p.stdout[-800:])
    h.check("first run: progress for each of the 5 steps", all(f"enpu plan: [{k}/5]" in p.stderr for k in range(1, 6)))
    h.check("first run: the farm validated the store", "sampled plans passed" in p.stderr, p.stderr[-1500:])
    summary = os.path.join(run, "replay/summary.json")
    if os.path.exists(summary):
        with open(summary) as f:
            doc = json.load(f)
        h.check("first run: the replay ran every policy of the job",
                {"nodvfs", "dvfs-c-walk", "enpu-c", "enpu-all"} <= set(json.dumps(doc).replace('"', " ").split()),
                json.dumps(doc)[:400])

        # 2 prefill nodes at most beta^2 (5.6): the predictive cap would hold every prefill
        # batch at its fastest plan, so the cluster files name the switching safeguards.
        clusters = [json.load(open(os.path.join(run, n))) for n in ("cluster.json", "nodes/cluster.json")]
        small = [c["prefill"]["nodes"] <= 5 for c in clusters]
        h.check("first run: a prefill pool of at most beta^2 nodes gets the switching safeguards, in both cluster "
                "files, and the replay runs them",
                all(small) and all(c.get("scheduler", {}).get("safeguards") == "switching" for c in clusters)
                and doc["policies"]["enpu-all"]["safeguards"] == "switching"
                and "safeguards: switching" in open(os.path.join(run, "init.md")).read(),
                [(c["prefill"]["nodes"], c.get("scheduler")) for c in clusters])

    stamp = {n: os.stat(os.path.join(run, n)).st_mtime_ns for n in outputs if os.path.exists(os.path.join(run, n))}
    p = plan(tmp)
    h.check("second run: exit 0", p.returncode == 0, (p.stdout + p.stderr)[-2000:])
    h.check("second run: the farm has nothing to do", "| tasks | 0 to do" in p.stdout, p.stdout[-1500:])
    h.check("second run: the replay and the report are kept",
            "replay: up to date, kept" in p.stderr and "report: up to date, kept" in p.stderr, p.stderr[-1500:])
    kept = [n for n in ("job.json", "cluster.json", "model.json", "init.md", "nodes/cluster.json", "nodes/sizing.md",
                        "replay/summary.json", "report/report.md")
            if os.stat(os.path.join(run, n)).st_mtime_ns == stamp.get(n)]
    h.check("second run: job init's files, the measured nodes, the replay and the report untouched",
            len(kept) == 8 and "nodes: up to date, kept" in p.stderr, f"kept {kept}")

    p = plan(tmp, "--slo-scale", "6", "--json")
    h.check("a new SLO scale: exit 0, the store's plans reused, the replay run again",
            p.returncode == 0 and "| tasks | 0 to do" in p.stderr and "replay: up to date" not in p.stderr,
            (p.stdout + p.stderr)[-2000:])
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    h.check("--json: one document on stdout naming the store and the report",
            doc.get("store") == os.path.join(run, "plans.h5") and doc.get("report", "").endswith("report/report.md"),
            p.stdout[-800:])

    env = dict(ENV, PATH="/nonexistent")  # no mpirun: the farm step cannot start
    cmd = [h.enpu, "plan", os.path.join(SRC, "tests/fixtures/hf/llama3.2-1b.json"), "--trace",
           os.path.join(tmp, "trace.csv"), "--chip", os.path.join(SRC, "jobs/chips/tpuv5p.json"), "--max-batch", "4",
           "--bucket-budget", "8", "--runs", os.path.join(tmp, "runs2")]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)
    h.check("a step that cannot start: exit 4, the step named, the resume line",
            p.returncode == 4 and "cannot run mpirun" in p.stderr and "stopped (exit 4); rerun" in p.stderr,
            p.stderr[-600:])

    p = plan(tmp, "--np", "0")
    h.check("--np 0: exit 2", p.returncode == 2, p.stderr[-300:])

    # Ctrl-C: the terminal sends SIGINT to the whole foreground group (here: a session of
    # its own). mpirun exits 1 when its ranks stop, and a step of enpu plan's own process
    # (job init, the node sizing) would die of the signal; enpu plan holds the signal and
    # tells the interruption by it: exit 3, and the same command resumes. Each run is held
    # at a step (the farm's task phase by ENPU_FARM_TEST_HOLD, the end of job init or of
    # the node sizing by ENPU_PLAN_TEST_HOLD) until the signal, which is sent once the
    # hold is announced on stderr.
    def held_plan(hold_env, hold_line, *extra, preexec_fn=None):
        """enpu plan on runs4, started in a session of its own with hold_env; returns the
        process, its stderr lines so far (a thread reads them) and whether it holds."""
        cmd = [h.enpu, "plan", os.path.join(SRC, "tests/fixtures/hf/llama3.2-1b.json"), "--trace",
               os.path.join(tmp, "trace.csv"), "--chip", os.path.join(SRC, "jobs/chips/tpuv5p.json"), "--np", "2",
               "--max-batch", "4", "--bucket-budget", "8", "--runs", os.path.join(tmp, "runs4"), *extra]
        held = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp,
                                env=dict(ENV, **hold_env), start_new_session=True, preexec_fn=preexec_fn)
        err = []
        held.reader = threading.Thread(target=lambda: err.extend(held.stderr), daemon=True)
        held.reader.start()
        holding = wait_for(lambda: any(hold_line in line for line in list(err)) or held.poll() is not None, 600,
                           0.05) and held.poll() is None
        return cmd, held, err, holding

    def finish(held, err):
        held.stdout.read()
        held.wait(timeout=600)
        held.reader.join(timeout=600)
        return "".join(err)

    def ctrl_c(label, hold_env, hold_line, *extra, check=None):
        cmd, held, err, holding = held_plan(hold_env, hold_line, *extra)
        h.check(f"Ctrl-C during {label}: the run holds there", holding, "".join(err)[-1500:])
        if holding:
            os.killpg(held.pid, signal.SIGINT)
        text = finish(held, err)
        h.check(f"Ctrl-C during {label}: exit 3 (interrupted), and the resume line",
                held.returncode == 3 and "interrupted" in text and "stopped (exit 3); rerun" in text,
                f"exit {held.returncode}: {text[-800:]}")
        if check:
            check(text)
        p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp, timeout=600)
        h.check(f"Ctrl-C during {label}: the same command then finishes (exit 0)", p.returncode == 0,
                p.stderr[-800:])

    ctrl_c("the farm (mpirun's exit 1)", {"ENPU_FARM_TEST_HOLD": "tasks"}, "farm: test hold at tasks", "--no-replay")
    ctrl_c("job init", {"ENPU_PLAN_TEST_HOLD": "init"}, "enpu plan: test hold at init", "--no-replay")

    # Inside the node sizing, which replays the whole trace once per round: the stop is
    # asked after each replay, so the sizing ends there (nothing of it written, no summary
    # line), not after its last round.
    def sizing_cut_short(text):
        nodes = os.path.join(tmp, "runs4", "llama3.2-1b", "nodes")
        h.check("Ctrl-C inside the node sizing: it stops after the round it is in",
                "node sizing: stopped (a stop signal) after the first round" in text
                and "enpu plan: nodes: prefill" not in text and not os.path.exists(os.path.join(nodes, "sizing.md"))
                and not os.path.exists(os.path.join(nodes, "cluster.json")), text[-800:])

    ctrl_c("a round of the node sizing", {"ENPU_PLAN_TEST_HOLD": "nodes-round"}, "enpu plan: test hold at nodes-round",
           check=sizing_cut_short)
    ctrl_c("the node sizing", {"ENPU_PLAN_TEST_HOLD": "nodes"}, "enpu plan: test hold at nodes")

    # Ctrl-\ (SIGQUIT) is not held: it kills the plan at once, as it kills any program.
    _, held, err, holding = held_plan({"ENPU_PLAN_TEST_HOLD": "init"}, "enpu plan: test hold at init", "--no-replay")
    h.check("Ctrl-\\: the run holds at job init's end", holding, "".join(err)[-1500:])
    if holding:
        os.killpg(held.pid, signal.SIGQUIT)
    text = finish(held, err)
    h.check("Ctrl-\\: the plan dies of SIGQUIT", held.returncode == -signal.SIGQUIT, f"exit {held.returncode}: {text[-800:]}")

    # A plan started with SIGINT ignored (`enpu plan ... &` in a script) keeps ignoring it:
    # a SIGINT during the hold is no stop; SIGUSR2 (the hold's release) lets the run go on
    # to the end (the store is already farmed), exit 0.
    _, held, err, holding = held_plan({"ENPU_PLAN_TEST_HOLD": "init"}, "enpu plan: test hold at init", "--no-replay",
                                      preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    h.check("SIGINT ignored at start: the run holds at job init's end", holding, "".join(err)[-1500:])
    if holding:
        os.killpg(held.pid, signal.SIGINT)  # delivered (here: discarded) before kill returns
        os.kill(held.pid, signal.SIGUSR2)
    text = finish(held, err)
    h.check("SIGINT ignored at start: it stays ignored (exit 0, no interruption)",
            held.returncode == 0 and "interrupted" not in text, f"exit {held.returncode}: {text[-800:]}")

    # The first 3,000 requests of Mooncake's conversation trace: a heavy tail of long
    # prompts. The node rules (from the busiest minute's mean) leave NoDVFS missing TTFT
    # and TPOT; the nodes measured on the store's NoDVFS plans meet both for >= 99 %,
    # while job init's own cluster.json keeps the rule's counts (the farm reads it).
    with open(os.path.join(SRC, "jobs/traces/mooncake_conversation_trace.csv")) as f:
        lines = f.readlines()
    with open(os.path.join(tmp, "mooncake.csv"), "w") as f:
        f.writelines(lines[:3001])
    cmd = [h.enpu, "plan", os.path.join(SRC, "tests/fixtures/hf/llama3.2-1b.json"), "--trace",
           os.path.join(tmp, "mooncake.csv"), "--chip", os.path.join(SRC, "jobs/chips/tpuv5p.json"), "--np", "2",
           "--max-batch", "8", "--bucket-budget", "32", "--runs", os.path.join(tmp, "runs3"), "--name", "mc"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=tmp, timeout=600)
    mc = os.path.join(tmp, "runs3", "mc")
    try:
        rule = json.load(open(os.path.join(mc, "cluster.json")))
        sized = json.load(open(os.path.join(mc, "nodes", "cluster.json")))
        nodvfs = json.load(open(os.path.join(mc, "replay", "summary.json")))["policies"]["nodvfs"]
    except (OSError, ValueError, KeyError):
        rule, sized, nodvfs = {}, {}, {}
    grew = [ph for ph in ("prefill", "decode") if sized.get(ph, {}).get("nodes", 0) > rule.get(ph, {}).get("nodes", 0)]
    h.check("Mooncake's heavy tail: the measured cluster grows the pools the rule under-provisions",
            p.returncode == 0 and grew, (p.stdout + p.stderr)[-1500:])
    h.check("  ... and NoDVFS then meets TTFT and TPOT for >= 99 % of the requests in the replay",
            nodvfs.get("ttft_attainment", 0) >= 0.99 and nodvfs.get("tpot_attainment", 0) >= 0.99,
            {k: nodvfs.get(k) for k in ("ttft_attainment", "tpot_attainment")})
    h.check("  ... the rule's small pool runs the switching safeguards, the measured one (more than beta^2 "
            "prefill nodes) the default",
            rule.get("scheduler", {}).get("safeguards") == "switching" and rule.get("prefill", {}).get("nodes", 9) <= 5
            and "scheduler" not in sized and sized.get("prefill", {}).get("nodes", 0) > 5,
            (rule.get("prefill"), rule.get("scheduler"), sized.get("prefill"), sized.get("scheduler")))
    h.check("  ... with the rule's and the measured attainment in sizing.md",
            os.path.exists(os.path.join(mc, "nodes", "sizing.md"))
            and "TTFT met by" in open(os.path.join(mc, "nodes", "sizing.md")).read())

h.finish()
