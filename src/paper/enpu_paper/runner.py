"""runner — one stage run: its key (the binary, its commands and its inputs' contents), its
stamp, its timings, the running command and the stop signals forwarded to it."""
import hashlib
import json
import os
import resource
import signal
import subprocess
import time

from .inputs import Failure, canonical, load_json, write_if_changed


def sha256_file(path, cache={}):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        cache[key] = h.hexdigest()
    return cache[key]


class Runner:
    def __init__(self, args, out):
        self.args = args
        self.out = out
        self.enpu = os.path.abspath(args.enpu)
        if not os.access(self.enpu, os.X_OK):
            raise Failure(f"{self.enpu}: no enpu binary (make build)", 2)
        self.enpu_sha = sha256_file(self.enpu)
        self.help = {}
        self.child = None
        self.stopped = False
        for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.forward)

    def help_text(self, cmd):
        if cmd not in self.help:
            p = subprocess.run([self.enpu, cmd, "--help"], capture_output=True, text=True)
            self.help[cmd] = p.stdout + p.stderr
        return self.help[cmd]

    def content_hash(self, store):
        p = subprocess.run([self.enpu, "store", "info", store, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"enpu store info {store}: {p.stderr.strip()}")
        return json.loads(p.stdout)["content_hash"]

    def key(self, cmds, files=(), stores=()):
        """A stage's key: the binary, its commands and its inputs' contents. A path is keyed
        as the absolute path it names, not as spelled: the commands name paths relative to
        the working directory when they lie below it (as_given), so the same pipeline run
        from another directory spells them differently and must still find its stages done."""
        h = hashlib.sha256()
        h.update(self.enpu_sha.encode())
        h.update(json.dumps([[canonical(a) for a in argv] for argv in cmds]).encode())
        for f in sorted(files, key=canonical):
            h.update(canonical(f).encode() + sha256_file(f).encode())
        for s in sorted(stores, key=canonical):
            h.update(canonical(s).encode() + self.content_hash(s).encode())
        return h.hexdigest()

    def stage(self, mdir, name, cmds, files=(), stores=(), outputs=(), stdout_to=None, env=None):
        """Run cmds (a list of argv lists) unless the stage's key and outputs are there.
        @return True when it ran."""
        stamp = os.path.join(mdir, ".stamps", name)
        key = self.key(cmds, files, stores)
        if os.path.exists(stamp) and open(stamp).read() == key and all(os.path.exists(o) for o in outputs):
            print(f"paper: {os.path.basename(mdir)}: {name}: unchanged", flush=True)
            return False
        print(f"paper: {os.path.basename(mdir)}: {name}: running", flush=True)
        t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        load = os.getloadavg()[0]
        for i, argv in enumerate(cmds):
            target = stdout_to[i] if stdout_to else None
            self.run(argv, target, env)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        timing = {"wall_s": round(time.monotonic() - t0, 2),
                  "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2),
                  "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_1min": round(load, 2),
                  "nproc": os.cpu_count()}
        if os.path.exists(stamp):
            os.remove(stamp)
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        self.record(mdir, name, timing)
        with open(stamp, "w") as f:
            f.write(key)
        return True

    def run(self, argv, stdout_path, env):
        shown = " ".join(argv)
        print(f"paper:   $ {shown}" + (f" > {stdout_path}" if stdout_path else ""), flush=True)
        full_env = dict(os.environ, **(env or {}))
        out = None
        if stdout_path:
            os.makedirs(os.path.dirname(stdout_path), exist_ok=True)
            out = open(stdout_path + ".tmp", "w")
        try:
            self.child = subprocess.Popen(argv, stdout=out, env=full_env)
            status = self.child.wait()
        finally:
            self.child = None
            if out:
                out.close()
        if stdout_path and status == 0:
            os.replace(stdout_path + ".tmp", stdout_path)
        if status == 3 or (self.stopped and status != 0):
            raise Failure(f"{shown}: stopped by a signal (exit status {status}); run the same command to resume", 3)
        if status != 0:
            raise Failure(f"{shown}: exit status {status}")

    def forward(self, signum, frame):
        """A stop signal (Slurm's warning SIGUSR1, SIGTERM, SIGINT) goes to the running
        command: the farm checkpoints and exits 3, and so does this script. mpirun forwards
        only SIGUSR1 (docs/store.md, Failure semantics), so it gets that for any of them."""
        self.stopped = True
        if self.child is not None:
            mpirun = self.args.launcher == "mpirun"
            self.child.send_signal(signal.SIGUSR1 if mpirun or signum == signal.SIGUSR1 else signum)

    def record(self, mdir, name, timing):
        path = os.path.join(mdir, "timings.json")
        data = load_json(path, "timings") if os.path.exists(path) else {}
        data[name] = timing
        write_if_changed(path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def launcher(self):
        a = self.args
        if a.launcher == "none":
            return [], {}
        if a.launcher == "srun":
            return ["srun", f"--mpi={os.environ.get('ENPU_SRUN_MPI', 'pmix')}", "--kill-on-bad-exit=0"], {}
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"} if os.geteuid() == 0 else {}
        return ["mpirun", "-np", str(a.np), "--oversubscribe"], env
