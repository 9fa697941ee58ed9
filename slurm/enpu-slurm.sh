# enpu-slurm.sh — shell functions shared by the enpu sbatch scripts in this folder; they
# source it (it is not submitted itself). Bash only.
#
# Invariants: the farm always runs in the background of the batch shell so that the
# shell's traps fire while it works (bash defers a trap until a foreground command ends);
# the warning signal is forwarded to the launcher (srun and mpirun both pass SIGUSR1 on
# to every rank); a run that stopped resumably (farm exit status 3) requeues its own job,
# and the next start resumes from the store and journal.
# mpirun (Open MPI 4.1) cannot forward SIGTERM or SIGINT: given one, it sends the ranks
# SIGTERM a second later, SIGKILL a second after that, and exits 1 whatever the ranks
# did. So with mpirun the batch shell turns its own SIGTERM/SIGINT into SIGUSR1 (which
# mpirun forwards: the farm checkpoints and exits 3), and when Slurm signals every process
# of the job at once (scancel, preemption, the time limit) mpirun's status 1 after such a
# signal counts as 3: the farm synced its journal the moment it saw the signal, so the
# work is kept and the next start resumes it.

# Sets ENPU_BIN to the enpu binary: $ENPU_BIN, else `enpu` on PATH, else the submit
# directory's build/enpu (a source checkout). Exits 2 when none is executable.
enpu_slurm_find_bin() {
  if [ -z "${ENPU_BIN:-}" ]; then
    if command -v enpu >/dev/null 2>&1; then
      ENPU_BIN=$(command -v enpu)
    else
      ENPU_BIN="${SLURM_SUBMIT_DIR:-$PWD}/build/enpu"
    fi
  fi
  if [ ! -x "$ENPU_BIN" ]; then
    echo "enpu-slurm: no enpu binary at '$ENPU_BIN' (set ENPU_BIN, put enpu on PATH, or submit from a checkout with build/enpu)" >&2
    exit 2
  fi
  export ENPU_BIN
}

# Sets the array ENPU_LAUNCH to the command prefix that starts one farm rank per Slurm
# task: ENPU_LAUNCHER=srun|mpirun|none, default srun when the job has several tasks.
# `sbatch -N 3` alone sets no SLURM_NTASKS; srun then starts one task per node, so the
# node count is the task count.
enpu_slurm_launcher() {
  local launcher=${ENPU_LAUNCHER:-}
  if [ -z "$launcher" ]; then
    if [ "${SLURM_NTASKS:-${SLURM_NNODES:-1}}" -gt 1 ]; then launcher=srun; else launcher=none; fi
  fi
  case "$launcher" in
    # --wait: a rank that dies (a crash, its node lost) leaves the others waiting on it
    # for ever; every rank of a farm leaves within moments of the others (they meet at
    # a last barrier), so 60 s after the first exit srun ends the rest.
    srun)   ENPU_LAUNCH=(srun "--mpi=${ENPU_SRUN_MPI:-pmix}" --kill-on-bad-exit=0 --wait=60) ;;
    mpirun) ENPU_LAUNCH=(mpirun) ;;  # Open MPI reads the rank count from the allocation
    none)   ENPU_LAUNCH=() ;;
    *) echo "enpu-slurm: ENPU_LAUNCHER must be srun, mpirun or none, got '$launcher'" >&2
       exit 2 ;;
  esac
}

# Runs `enpu farm "$@"` under the launcher, forwarding SIGUSR1 (Slurm's warning signal,
# `--signal=B:USR1@secs`), SIGTERM and SIGINT to it (as SIGUSR1 to mpirun). Returns the
# farm's exit status (mpirun's 1 after a stop signal counted as 3); on status 3
# (checkpointed, resumable) it requeues this job first unless ENPU_MAX_REQUEUES restarts
# were already used, and then the caller should exit. Status 4 (disk full, I/O error,
# the store locked by another writer) is not requeued: it needs the environment fixed.
enpu_slurm_farm() {
  enpu_slurm_find_bin
  enpu_slurm_launcher
  local stop_signal="" signals=0 seen farm_pid="" status forward=TERM
  # mpirun forwards only SIGUSR1 (see the top of this file)
  [ "${ENPU_LAUNCH[0]:-}" = mpirun ] && forward=USR1
  trap 'stop_signal=USR1; signals=$((signals + 1)); [ -n "$farm_pid" ] && kill -USR1 "$farm_pid" 2>/dev/null' USR1
  trap 'stop_signal=TERM; signals=$((signals + 1)); [ -n "$farm_pid" ] && kill -$forward "$farm_pid" 2>/dev/null' TERM
  trap 'stop_signal=INT; signals=$((signals + 1)); [ -n "$farm_pid" ] && kill -$forward "$farm_pid" 2>/dev/null' INT
  echo "enpu-slurm: job ${SLURM_JOB_ID:-none} start $(date -u +%FT%TZ) restart ${SLURM_RESTART_COUNT:-0}:" \
       "${ENPU_LAUNCH[*]} $ENPU_BIN farm $*" >&2
  "${ENPU_LAUNCH[@]}" "$ENPU_BIN" farm "$@" &
  farm_pid=$!
  # A signal that came before the launch is passed on now.
  [ "$stop_signal" = USR1 ] && kill -USR1 "$farm_pid" 2>/dev/null
  [ -n "$stop_signal" ] && [ "$stop_signal" != USR1 ] && kill -$forward "$farm_pid" 2>/dev/null
  # wait returns early (status > 128) when a trapped signal arrives; waiting again blocks
  # until the farm exits, or returns its stored status if it already has.
  while :; do
    seen=$signals
    wait "$farm_pid"
    status=$?
    if [ "$status" -le 128 ] || [ "$signals" -eq "$seen" ]; then break; fi
  done
  trap - USR1 TERM INT
  echo "enpu-slurm: farm exit status $status${stop_signal:+ after SIG$stop_signal} at $(date -u +%FT%TZ)" >&2
  if [ "$status" -eq 1 ] && [ -n "$stop_signal" ] && [ "$forward" = USR1 ]; then
    echo "enpu-slurm: mpirun exits 1 when it is signalled itself; the farm kept its work: status 3" >&2
    status=3
  fi
  # Ranks killed from outside (SIGKILL or SIGTERM, no stop signal to this script): srun
  # lost a node of the job and cancelled the step, or the step was cancelled. The
  # journal holds every result synced before, so the next start resumes like after a
  # checkpoint. A crash of the farm itself (SIGSEGV, SIGABRT) is not requeued.
  if [ -z "$stop_signal" ] && [ "${ENPU_LAUNCH[0]:-}" = srun ] && { [ "$status" -eq 137 ] || [ "$status" -eq 143 ]; }; then
    echo "enpu-slurm: the farm's ranks were killed (status $status: a node of the job was lost or the step" \
         "was cancelled); its journal keeps what was computed: status 3" >&2
    status=3
  fi
  if [ "$status" -eq 3 ]; then
    enpu_slurm_requeue
  fi
  return "$status"
}

# Requeues this job so that the next start resumes the farm; an array task is named
# ARRAYID_TASK (its SLURM_JOB_ID may be the array's own id, which would requeue every
# task). Slurm delays the restart by the credential lifetime.
enpu_slurm_requeue() {
  local max=${ENPU_MAX_REQUEUES:-20} id=${SLURM_JOB_ID:-}
  [ -n "${SLURM_ARRAY_TASK_ID:-}" ] && id="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"
  if [ -z "${SLURM_JOB_ID:-}" ]; then
    echo "enpu-slurm: not under Slurm; rerun the same command to resume" >&2
  elif [ "${SLURM_RESTART_COUNT:-0}" -ge "$max" ]; then
    echo "enpu-slurm: not requeueing: $max restarts used (ENPU_MAX_REQUEUES); resubmit to resume" >&2
  else
    echo "enpu-slurm: checkpointed; requeueing job $id to resume" >&2
    scontrol requeue "$id"
  fi
}

# Refuses (exit 2, with the reason) a request of more tasks than the partition has CPUs:
# Slurm would keep such a job PENDING forever with no hint why. Arguments: the sbatch
# options (--ntasks=N, --ntasks N, -n N, -nN; --partition=P, -p P; default: the default
# partition). Reads `sinfo`; says nothing and returns 0 when it cannot tell.
# Prints the folder where SCRIPT's log goes when it is submitted through submit.sh: the
# job's results folder. farm/regen (--results D), validate (--out D): D/<job>, the job's
# "name" (validate: the name in the store's provenance); models-array (after --,
# --results D): D; sweep and paper (--out D): D itself, their own output folder. Without
# the option D is runs, the run outputs' folder (ignored by git); paper's is runs/paper.
# A job file or store that enpu refuses is reported and exits 2, before anything is
# submitted. Needs ENPU_BIN (enpu_slurm_find_bin).
enpu_slurm_log_dir() {
  local script prev="" a d="" name
  script=$(basename "$1"); shift
  for a in "$@"; do
    case "$prev" in --results | --out) d=$a ;; esac
    case "$a" in --results=* | --out=*) d=${a#*=} ;; esac
    prev=$a
  done
  case "$script" in
    farm.sbatch | regen.sbatch | sweep.sbatch)
      name=$("$ENPU_BIN" buckets "$1" --json | sed -n 's/^  "job": "\([^"/]*\)",\{0,1\}$/\1/p') ;;
    validate.sbatch)
      name=$("$ENPU_BIN" store info "$1" --json | sed -n 's/^  "job_name": "\([^"/]*\)",\{0,1\}$/\1/p') ;;
    paper.sbatch) echo "${d:-runs/paper}"; return 0 ;;
    *) echo "${d:-runs}"; return 0 ;;
  esac
  [ -n "$name" ] || { echo "enpu-slurm: cannot tell the job's name from ${1:-(no argument)}; not submitted" >&2; exit 2; }
  case "$script" in
    sweep.sbatch) echo "${d:-runs/$name}" ;;
    *) echo "${d:-runs}/$name" ;;
  esac
}

enpu_slurm_fits() {
  local ntasks=1 partition="" cpus
  while [ $# -gt 0 ]; do
    case "$1" in
      --ntasks=*) ntasks=${1#--ntasks=} ;;
      --ntasks|-n) ntasks=${2:-1}; shift ;;
      -n[0-9]*) ntasks=${1#-n} ;;
      --partition=*) partition=${1#--partition=} ;;
      --partition|-p) partition=${2:-}; shift ;;
      -p?*) partition=${1#-p} ;;
    esac
    shift
  done
  # %C: allocated/idle/other/total CPUs of each partition; the default one carries a '*'
  cpus=$(sinfo -h -o '%P %C' 2>/dev/null | awk -v p="$partition" '
    { name = $1; def = sub(/\*$/, "", name); split($2, c, "/") }
    (p == "" && def) || (p != "" && name == p) { total += c[4]; found = name }
    END { if (found != "") print found, total }')
  [ -n "$cpus" ] || return 0
  set -- $cpus
  if [ "$ntasks" -gt "$2" ] 2>/dev/null; then
    echo "enpu-slurm: --ntasks=$ntasks does not fit partition $1: it has $2 CPUs in all, so the job would stay PENDING forever; ask for --ntasks=$2 or fewer, or another partition (-p)" >&2
    exit 2
  fi
}
