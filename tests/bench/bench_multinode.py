"""The farm master's cost with its workers on other hosts: the dispatch job of
bench_dispatch.py (8,374 tasks of ~0.2 ms) under `mpirun --hostfile` on the 3-node
cluster of network namespaces (tests/integration/slurm/netns_cluster.py), rank 0 alone on
n1 and the workers on n2 and n3 (oversubscribed on this machine's cores), so every
message of the master crosses TCP between hosts (btl tcp,self on the cluster's subnet).
Per rank count it prints what bench_dispatch.py prints (the master's CPU per task,
tasks per batch), the same master's CPU per task with every rank on one host (shared
memory, same np, run right after: "one host"), and the bytes on n1's link per task, both
ways (the kernel's counters of the node's interface: TCP/IP headers and Open MPI's own
traffic included).
Then a least-squares fit of the master's CPU to `a × batches + b × tasks` gives the
per-message and per-task costs to give tests/bench/bench_farm_sim (--msg-us, --task-us).
Needs root (namespaces, Slurm daemons). Figures only: nothing fails on speed.
Usage: bench_multinode.py ENPU [--np 3,9,17,33]"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration", "slurm"))
from bench_dispatch import farm  # noqa: E402
from netns_cluster import NetnsCluster  # noqa: E402


def link_bytes(c, node):
    """(received, sent) bytes of the node's interface (netlink, so the node's own: /sys
    in its mount namespace is the host's)."""
    out = json.loads(c.run_on(node, ["ip", "-s", "-j", "link", "show", "eth0"]).stdout)
    stats = out[0]["stats64"]
    return stats["rx"]["bytes"], stats["tx"]["bytes"]


def main():
    args = sys.argv[1:]
    nps = [3, 9, 17, 33]
    if "--np" in args:
        nps = [int(x) for x in args[args.index("--np") + 1].split(",")]
    enpu = os.path.abspath(args[0])
    tmp = tempfile.mkdtemp(prefix="enpu-multinode-bench-")
    c = NetnsCluster(3)
    c.start()
    rows = []
    try:
        env = c.mpi_env()
        for n in nps:
            hosts = os.path.join(tmp, f"hosts{n}")
            half = (n - 1 + 1) // 2
            with open(hosts, "w") as f:  # rank 0 alone on n1, the workers split over n2, n3
                f.write(f"n1 slots=1\nn2 slots={half}\nn3 slots={n - 1 - half}\n")
            launch = (lambda k, hosts=hosts: [*c.node_prefix("n1"), "mpirun", "--hostfile", hosts,
                                              "--oversubscribe", "-np", str(k)])
            rx0, tx0 = link_bytes(c, "n1")
            r = farm(enpu, n, tmp, launch=launch, env=env, tag="mn")
            rx1, tx1 = link_bytes(c, "n1")
            r["rx_per_task"], r["tx_per_task"] = (rx1 - rx0) / r["tasks"], (tx1 - tx0) / r["tasks"]
            r["shm_us_per_task"] = farm(enpu, n, tmp, tag="shm")["master_us_per_task"]  # one host, same np
            rows.append(r)
    finally:
        c.stop()
    print(f"{'np':>4} {'tasks':>7} {'wall s':>7} {'master CPU s':>12} {'us/task':>8} {'one host':>8} "
          f"{'core %':>7} {'tasks/batch':>11} {'B in/task':>10} {'B out/task':>10}")
    for r in rows:
        print(f"{r['np']:>4} {r['tasks']:>7} {r['wall_s']:>7.2f} {r['master_cpu_s']:>12.2f} "
              f"{r['master_us_per_task']:>8.1f} {r['shm_us_per_task']:>8.1f} {r['master_core_pct']:>7.1f} "
              f"{r['tasks_per_batch']:>11.1f} {r['rx_per_task']:>10.0f} {r['tx_per_task']:>10.0f}")
    # master CPU = a * batches + b * tasks + setup (least squares over the runs)
    xs = [(r["batches"], r["tasks"], 1.0) for r in rows]
    ys = [r["master_cpu_s"] for r in rows]
    if len(rows) >= 3:
        import numpy  # noqa: PLC0415 - only for the fit
        (a, b, c0), *_ = numpy.linalg.lstsq(numpy.array(xs), numpy.array(ys), rcond=None)
        print(f"fit: {1e6 * a:.1f} us a message (batch), {1e6 * b:.1f} us a task, {c0:.2f} s fixed "
              f"(bench_farm_sim --msg-us {1e6 * a:.0f} --task-us {1e6 * b:.1f})")


if __name__ == "__main__":
    main()
