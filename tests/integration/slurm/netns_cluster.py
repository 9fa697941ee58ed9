"""An N-node Slurm cluster on one machine, each node a host of its own: a network
namespace (one address on a test subnet, reached over a bridge), a hostname (UTS
namespace) and a mount namespace whose node-local directory is bound over Slurm's TmpFS.
Nothing here needs a virtual machine; everything needs root.

Layout (names carry a per-cluster tag, enpu<pid>, so two clusters on the machine never
meet, and a cluster whose test was killed outright is removed by the next start):
  <tag>sw       a namespace holding only the bridge: no address, no route out
  <tag>ctl      slurmctld at .1; Slurm's client commands run here (client_prefix)
  <tag>n1..nN   one node each at .11, .12, ...: a holder process keeps its UTS and mount
                namespaces; slurmd -N nK and whatever it starts run inside them
munged runs on the host: its socket is a file every namespace sees.

Traffic stays inside these namespaces: the subnet exists only on their interfaces. A
node "dies" (kill_node) as a real one does, all at once: its link goes down, every
process in its network namespace is killed, and the namespace goes with its TCP state;
revive_node boots it with a new one. stop() removes
every namespace (and with them the bridge and links), kills every process it started,
and removes the directory; leftovers() says what of that is still there (the tests
assert it is nothing).

The Slurm details that matter (found by trying): enter a node's network with nsenter
--net=/run/netns/NAME, not `ip netns exec` (which remounts /sys, so slurmd loses the
cgroup mounts and refuses to start); a mount namespace per node with a directory of its
own over TmpFS, or the pmix plugin's spmix_appdir_* directories collide between nodes;
%n in SlurmdSpoolDir, SlurmdPidFile and SlurmdLogFile."""
import os
import re
import shutil
import signal
import subprocess
import time

from slurm_cluster import LocalSlurm, SlurmUnavailable, _die_with_parent

SUBNET = "10.77.0"  # only ever on interfaces inside this cluster's namespaces


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if check and r.returncode != 0:
        raise SlurmUnavailable(f"ip {' '.join(args)}: {r.stderr.strip()}")
    return r


def remove_orphans():
    """Namespaces of a cluster whose test process is gone (killed outright, as by a CTest
    timeout, before its stop() ran): their daemons died with it (PR_SET_PDEATHSIG), but a
    named network namespace outlives every process. Names carry the owner's pid."""
    if not os.path.isdir("/run/netns"):
        return
    for name in os.listdir("/run/netns"):
        m = re.fullmatch(r"enpu(\d+)(sw|ctl|n\d+)", name)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            _ip("netns", "del", name, check=False)


class NetnsCluster(LocalSlurm):
    def __init__(self, nodes=3, keep=False, hide=None):
        """hide: {node: [directory, ...]} that node sees empty (a tmpfs over each), as a
        node that does not mount the file system holding them."""
        super().__init__(cpus=1, keep=keep)
        self.nodes = [f"n{k}" for k in range(1, nodes + 1)]
        self.hide = hide or {}
        self.tag = f"enpu{os.getpid()}"
        self.holders = {}
        self.client_prefix = ["nsenter", f"--net=/run/netns/{self.ns('ctl')}"]
        self.log_names = [f"slurmd-{n}" for n in self.nodes]

    def ns(self, name):
        return f"{self.tag}{name}"

    def addr(self, node):
        return f"{SUBNET}.1" if node == "ctl" else f"{SUBNET}.{10 + self.nodes.index(node) + 1}"

    # ---------------------------------------------------------------- network
    def _net_up(self):
        _ip("netns", "add", self.ns("sw"))
        _ip("-n", self.ns("sw"), "link", "add", "br0", "type", "bridge")
        _ip("-n", self.ns("sw"), "link", "set", "br0", "up")
        for host in ["ctl"] + self.nodes:
            self._host_net_up(host)

    def _port(self, host):
        """The host's link on the bridge (in the switch namespace)."""
        return f"{self.tag}v{(['ctl'] + self.nodes).index(host)}"

    def _host_net_up(self, host):
        """A new network stack for the host: its namespace, its link to the bridge, its
        address."""
        ns, port = self.ns(host), self._port(host)
        _ip("netns", "add", ns)
        _ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", port, "netns", self.ns("sw"))
        _ip("-n", self.ns("sw"), "link", "set", port, "master", "br0")
        _ip("-n", self.ns("sw"), "link", "set", port, "up")
        _ip("-n", ns, "addr", "add", f"{self.addr(host)}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")

    # ---------------------------------------------------------------- nodes
    def _start_holder(self, node):
        """A process in the node's network namespace that owns its hostname and mount
        namespace (node-local TmpFS); it prints 'ready' and sleeps until killed."""
        local = self._path(f"tmp-{node}")
        os.makedirs(local, exist_ok=True)
        mounts = [f"mount --bind {local} {self._path('tmp')}", f"mount --bind {self._path('hosts')} /etc/hosts"]
        mounts += [f"mount -t tmpfs tmpfs {d}" for d in self.hide.get(node, ())]
        script = f"hostname {node} && {' && '.join(mounts)} && echo ready && exec sleep infinity"
        p = subprocess.Popen(["nsenter", f"--net=/run/netns/{self.ns(node)}", "unshare", "--uts", "--mount",
                              "--propagation", "private", "sh", "-c", script],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             text=True, preexec_fn=_die_with_parent)
        line = p.stdout.readline().strip()
        if line != "ready":
            p.kill()
            raise SlurmUnavailable(f"node {node}: {line or 'holder exited'}")
        # the holder is `sleep` now, exec'd by sh inside the namespaces
        self.holders[node] = p
        with open(self._path(f"holder-{node}.pid"), "w") as f:
            f.write(str(p.pid))

    def node_prefix(self, node):
        """What runs a command on `node`: inside its network, UTS and mount namespaces."""
        return ["nsenter", "-t", str(self.holders[node].pid), "--net", "--uts", "--mount"]

    def _start_node(self, node, timeout_s):
        self._start_holder(node)
        self._spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", self.conf],
                    prefix=self.node_prefix(node))

    def run_on(self, node, argv, **kw):
        """subprocess.run of argv on `node`, output captured as text."""
        return subprocess.run(self.node_prefix(node) + list(argv), capture_output=True, text=True, **kw)

    def rsh_agent(self):
        """An executable that runs a command on a node as ssh would (`agent HOST CMD...`,
        the command a shell line): Open MPI's plm_rsh_agent for `mpirun --hostfile`
        across the nodes without Slurm or sshd."""
        path = self._path("rsh-agent")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n# agent HOST COMMAND...: COMMAND in HOST's namespaces\n"
                    "host=$1; shift\n"
                    f"exec nsenter -t \"$(cat {self._path('holder-')}$host.pid)\" --net --uts --mount "
                    "sh -c \"$*\"\n")
        os.chmod(path, 0o755)
        return path

    def hostfile(self):
        path = self._path("hostfile")
        with open(path, "w") as f:
            f.write("".join(f"{n} slots=1\n" for n in self.nodes))
        return path

    def mpi_env(self, env=None):
        """Open MPI between nodes over TCP on the test subnet only (no shared memory, no
        other interface)."""
        return dict(env or os.environ, OMPI_MCA_btl="tcp,self", OMPI_MCA_btl_tcp_if_include=f"{SUBNET}.0/24",
                    OMPI_MCA_oob_tcp_if_include=f"{SUBNET}.0/24", OMPI_MCA_plm_rsh_agent=self.rsh_agent(),
                    OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def _start_daemons(self, timeout_s):
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", self.conf], prefix=self.client_prefix)
        self._wait_for(lambda: self._ok(["scontrol", "ping"], "UP"), timeout_s,
                       "slurmctld answering scontrol ping")
        for node in self.nodes:
            self._start_node(node, timeout_s)
        self._wait_for(self.nodes_idle, timeout_s, f"nodes {','.join(self.nodes)} idle in sinfo")

    def nodes_idle(self, nodes=None):
        out = self.client(["sinfo", "--noheader", "--Node", "--format=%N %T"])
        states = dict(line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)
        return out.returncode == 0 and all(states.get(n) == "idle" for n in (nodes or self.nodes))

    def kill_node(self, node):
        """The node dies at once: its link goes down, every process in its network
        namespace (slurmd, its slurmstepd, the ranks, the holder) gets SIGKILL, and its
        network stack goes with it (the namespace is deleted: a dead host keeps no TCP
        state, and its killed sockets must not linger to meet the ports of the runs after
        it, as they would in a namespace kept alive)."""
        _ip("-n", self.ns("sw"), "link", "set", self._port(node), "down")
        for _ in range(50):  # a dying slurmstepd may fork once more: until none is left
            pids = self.pids_on(node)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        for name in (f"slurmd-{node}",):
            p = self.procs.pop(name, None)
            if p:
                p.wait(timeout=10)
        h = self.holders.pop(node, None)
        if h:
            h.wait(timeout=10)
        # the link first, by name: a deleted namespace frees its devices later, in the
        # kernel's own time, and the revived node's link takes the same name
        _ip("-n", self.ns("sw"), "link", "del", self._port(node), check=False)
        _ip("netns", "del", self.ns(node), check=False)

    def revive_node(self, node, timeout_s=60):
        """The node boots again: a new network stack, a new slurmd, and an empty node-local
        directory and spool (a reboot clears /tmp; the killed steps' pmix directories and
        sockets there would make the requeued job's step, with the same job and step id,
        fail to launch on this node: "Cannot bind() UNIX socket ... Address already in
        use")."""
        for d in (f"tmp-{node}", f"spool-{node}"):
            shutil.rmtree(self._path(d), ignore_errors=True)
        self._host_net_up(node)
        self._start_node(node, timeout_s)

    def pids_on(self, node):
        r = _ip("netns", "pids", self.ns(node), check=False)
        return [int(x) for x in r.stdout.split()]

    # ---------------------------------------------------------------- start / stop
    def start(self, timeout_s=30):
        if os.geteuid() != 0:
            raise SlurmUnavailable("network namespaces need root")
        remove_orphans()
        try:
            self._net_up()
        except BaseException:
            self._net_down()
            raise
        super().start(timeout_s)

    def stop(self):
        try:
            super().stop()
        finally:
            for node in list(self.holders):
                self.kill_node(node)
            self._net_down()

    def _net_down(self):
        for host in ["ctl"] + self.nodes + ["sw"]:
            ns = self.ns(host)
            if not os.path.exists(f"/run/netns/{ns}"):
                continue
            for pid in self.pids_on(host) if host != "sw" else []:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _ip("netns", "del", ns, check=False)
        for host in ["ctl"] + self.nodes:  # a link whose move into the switch failed
            _ip("link", "del", self._port(host), check=False)

    def leftovers(self):
        """What this cluster left on the machine: namespaces, links, processes in them,
        its directory. Empty after stop()."""
        left = [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(self.tag)] \
            if os.path.isdir("/run/netns") else []
        links = _ip("-o", "link", check=False).stdout
        left += [f"link {line.split(':')[1].strip()}" for line in links.splitlines() if self.tag in line]
        left += [f"process {p.pid}" for p in list(self.procs.values()) + list(self.holders.values())
                 if p.poll() is None]
        if self.root and os.path.exists(self.root) and not self.keep:
            left.append(f"directory {self.root}")
        return left

    # ---------------------------------------------------------------- conf
    def _write_conf(self):
        for d in ("state", "tmp"):
            os.makedirs(self._path(d))
        with open(self._path("hosts"), "w") as f:  # each node's /etc/hosts
            f.write("127.0.0.1 localhost\n" + "".join(f"{self.addr(h)} {h}\n" for h in ["ctl"] + self.nodes))
        self._write_settings([
            f"SlurmctldHost=localhost({self.addr('ctl')})",
            f"SlurmdSpoolDir={self._path('spool-%n')}",
            f"SlurmdPidFile={self._path('slurmd-%n.pid')}",
            f"SlurmdLogFile={self._path('slurmd-%n.log')}",
            # a lost node is noticed in seconds, not the default 5 minutes
            "SlurmdTimeout=6",
            "MessageTimeout=4",
            "SlurmdParameters=config_overrides",
            *[f"NodeName={n} NodeAddr={self.addr(n)} NodeHostname={n} CPUs=1 State=UNKNOWN" for n in self.nodes],
            f"PartitionName=debug Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP",
        ])
