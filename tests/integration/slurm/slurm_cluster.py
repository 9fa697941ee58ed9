"""A real single-node Slurm (munged + slurmctld + slurmd) on localhost, for tests.

Everything lives under one temporary directory: the munge key and socket, slurm.conf,
state, spool, logs. Daemons run in the foreground as children of this process, so
teardown kills exactly the PIDs started here (never by name), also when a test fails.
Jobs are cancelled and waited for before slurmd stops, so no slurmstepd outlives it.

Invariant: while a LocalSlurm is started, SLURM_CONF in os.environ points at its
slurm.conf, so the Slurm client commands (sbatch, squeue, scontrol) talk to it only.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

DAEMONS = ("munged", "slurmctld", "slurmd")
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """Runs in each daemon before exec: if the test process is killed outright (SIGKILL
    on a CTest timeout), the kernel sends the daemon SIGTERM, so none is left behind."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class SlurmUnavailable(Exception):
    """Slurm could not be started here (missing package, daemon refused to start)."""


def _free_ports(count):
    """Ports the kernel hands out now; slurmctld and slurmd bind them a moment later."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class LocalSlurm:
    def __init__(self, cpus=2, keep=False):
        self.cpus = cpus
        self.keep = keep
        self.root = None
        self.procs = {}
        self._old_env = None
        self.client_prefix = []  # what runs a client command where slurmctld is reached
        self.log_names = []  # daemons' logs beyond DAEMONS' (root/<name>.out and .log)
        self.kill_wait_s = 10  # a farm's checkpoint after SIGTERM fits in it

    # ---------------------------------------------------------------- start / stop
    def start(self, timeout_s=30):
        for tool in DAEMONS + ("sbatch", "squeue", "scontrol", "scancel", "sinfo"):
            if shutil.which(tool) is None and not os.path.exists("/usr/sbin/" + tool):
                raise SlurmUnavailable(f"{tool} not found (install slurm-wlm and munge)")
        if os.geteuid() != 0:
            raise SlurmUnavailable("the local Slurm runs its daemons as root (SlurmUser=root)")
        self.root = tempfile.mkdtemp(prefix="enpu-slurm-")
        try:
            self._write_munge_key()
            self._start_munged()
            self._write_conf()
            self._old_env = os.environ.get("SLURM_CONF")
            os.environ["SLURM_CONF"] = self.conf
            self._start_daemons(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _start_daemons(self, timeout_s):
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf])
        self._wait_for(lambda: self._ok(["scontrol", "ping"], "UP"), timeout_s,
                       "slurmctld answering scontrol ping")
        self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf])
        self._wait_for(self.node_idle, timeout_s, "node localhost idle in sinfo")

    def client(self, cmd, **kw):
        """A Slurm client command (sbatch, squeue, scontrol, ...) run where it reaches
        slurmctld, as subprocess.run with its output captured as text."""
        kw.setdefault("timeout", 20)
        return subprocess.run(self.client_prefix + list(cmd), capture_output=True, text=True, **kw)

    def stop(self):
        """Cancel jobs, wait for them, then stop the daemons by PID in reverse order."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.client(["scancel", "--full", "--quiet", "--user", "root"])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.squeue_ids():
                time.sleep(0.5)
        for name in [n for n in self.procs if n not in ("slurmctld", "munged")] + ["slurmctld", "munged"]:
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._old_env is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = self._old_env
        if self.root and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    # ---------------------------------------------------------------- jobs
    def sbatch(self, script, args=(), options=(), cwd=None, env=None):
        """Submits a batch script; returns the job id (sbatch --parsable)."""
        cmd = ["sbatch", "--parsable"] + list(options) + [script] + list(args)
        out = self.client(cmd, cwd=cwd, env=env, timeout=30)
        if out.returncode != 0:
            raise RuntimeError(f"sbatch failed ({out.returncode}): {out.stderr.strip()}")
        return out.stdout.strip().split(";")[0]

    def squeue_ids(self):
        out = self.client(["squeue", "--noheader", "--format=%i"])
        return [line.strip() for line in out.stdout.splitlines() if line.strip()]

    def job_info(self, job_id):
        """`scontrol show job` as a dict per array task/job: {JobId: {Key: Value}}."""
        out = self.client(["scontrol", "--oneliner", "show", "job", str(job_id)])
        jobs = {}
        for line in out.stdout.splitlines():
            fields = {}
            for tok in line.split():
                key, sep, val = tok.partition("=")
                if sep:
                    fields[key] = val
            if "JobId" in fields:
                jobs[fields["JobId"]] = fields
        return jobs

    def wait_job(self, job_id, timeout_s, progress=None, max_s=None):
        """Waits until every task of the job has left the queue for good (a requeued job
        comes back as PENDING, so the job must be in a final state, not just off squeue);
        returns the job_info dict of its tasks. With `progress` (a function of the job
        info returning anything that changes while the job advances: restarts, log
        growth), timeout_s bounds the time without progress instead of the whole wait,
        which max_s (default 10 x timeout_s) still caps."""
        final = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                 "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED")
        start = last_change = time.monotonic()
        cap = start + (max_s or 10 * timeout_s)
        seen = None
        while True:
            info = self.job_info(job_id)
            if info and all(j.get("JobState") in final for j in info.values()):
                return info
            now = time.monotonic()
            if progress is not None:
                key = progress(info)
                if key != seen:
                    seen, last_change = key, now
            if now - last_change > timeout_s or now > cap:
                states = {k: v.get("JobState") for k, v in info.items()}
                raise TimeoutError(f"job {job_id} not finished after {now - start:.0f} s "
                                   f"({now - last_change:.0f} s without progress): {states}")
            time.sleep(1)

    def node_idle(self):
        out = self.client(["sinfo", "--noheader", "--format=%T", "--nodes=localhost"])
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def logs(self):
        """The tails of the daemons' output and log files, for a failure message."""
        text = []
        for name in sorted(set(DAEMONS) | set(self.log_names)):
            for suffix in (".out", ".log"):
                path = os.path.join(self.root or "", name + suffix)
                if os.path.exists(path):
                    with open(path, errors="replace") as f:
                        tail = "".join(f.readlines()[-20:])
                    if tail.strip():
                        text.append(f"---- {name}{suffix}\n{tail}")
        return "\n".join(text)

    # ---------------------------------------------------------------- internals
    def _path(self, *parts):
        return os.path.join(self.root, *parts)

    def _write_munge_key(self):
        os.makedirs(self._path("munge"), mode=0o700)
        key = self._path("munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)

    def _start_munged(self):
        # munged refuses a socket directory that others can write; 0755 is what it wants.
        sock_dir = self._path("munge-run")
        os.makedirs(sock_dir)
        os.chmod(sock_dir, 0o755)
        self.munge_socket = os.path.join(sock_dir, "munge.socket.2")
        self._spawn("munged", ["munged", "--foreground", "--force",
                               "--socket=" + self.munge_socket,
                               "--key-file=" + self._path("munge", "munge.key"),
                               "--pid-file=" + self._path("munge", "munged.pid"),
                               "--seed-file=" + self._path("munge", "munged.seed"),
                               "--log-file=" + self._path("munged.log")])
        self._wait_for(lambda: os.path.exists(self.munge_socket), 10, "munged socket")

    def _write_conf(self):
        ctld_port, slurmd_port = _free_ports(2)
        for d in ("state", "spool", "tmp"):
            os.makedirs(self._path(d))
        self._write_settings([
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={slurmd_port}",
            f"SlurmdSpoolDir={self._path('spool')}",
            f"SlurmdPidFile={self._path('slurmd.pid')}",
            f"SlurmdLogFile={self._path('slurmd.log')}",
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={self.cpus} State=UNKNOWN",
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ])

    def _write_settings(self, site):
        """slurm.conf: what every test cluster shares, then `site` (hosts, ports, nodes,
        the per-node paths)."""
        self.conf = self._path("slurm.conf")
        settings = [
            "ClusterName=enputest",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            # cred_expire also delays the restart of a requeued job (default 120 s).
            f"AuthInfo=socket={self.munge_socket},cred_expire=10",
            f"StateSaveLocation={self._path('state')}",
            # The pmix plugin's per-step directories (spmix_appdir_<uid>_<job>.<step>) go
            # under TmpFS: a second test cluster on the machine numbers its jobs from 1 too.
            f"TmpFS={self._path('tmp')}",
            f"SlurmctldPidFile={self._path('slurmctld.pid')}",
            f"SlurmctldLogFile={self._path('slurmctld.log')}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "MpiDefault=pmix",
            "MailProg=/bin/true",
            "SchedulerType=sched/backfill",
            # A requeued job becomes eligible after cred_expire; the main scheduling loop
            # (default every 60 s) is what starts it then.
            "SchedulerParameters=sched_interval=2,bf_interval=2",
            "JobRequeue=1",
            "ReturnToService=2",
            f"KillWait={self.kill_wait_s}",
            "MinJobAge=600",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            *site,
        ]
        with open(self.conf, "w") as f:
            f.write("\n".join(settings) + "\n")

    def _spawn(self, name, argv, prefix=()):
        """A daemon in the foreground, its output in root/<name>.out; `prefix` runs it
        elsewhere (nsenter into a node's namespaces)."""
        exe = shutil.which(argv[0]) or "/usr/sbin/" + argv[0]
        log = open(self._path(name + ".out"), "w")
        self.procs[name] = subprocess.Popen(list(prefix) + [exe] + argv[1:], stdout=log,
                                            stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL,
                                            preexec_fn=_die_with_parent)
        log.close()

    def _ok(self, cmd, needle):
        out = self.client(cmd)
        return out.returncode == 0 and needle in out.stdout

    def _wait_for(self, cond, timeout_s, what):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    raise SlurmUnavailable(f"{name} exited with status {proc.returncode} "
                                           f"while waiting for {what}\n{self.logs()}")
            if cond():
                return
            time.sleep(0.3)
        raise SlurmUnavailable(f"timed out after {timeout_s} s waiting for {what}\n"
                               f"{self.logs()}")
