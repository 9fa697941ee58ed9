#!/bin/bash
# submit.sh — sbatch with two things done first:
# - a request of more --ntasks than the partition has CPUs is refused with the reason
#   (enpu_slurm_fits) instead of pending forever;
# - the job's log goes under the job's results folder (enpu_slurm_log_dir: runs/<job>/
#   by default, DIR/<job>/ with --results DIR), not into the folder you submit from,
#   unless you give --output yourself. The scripts that submit more jobs (sweep, paper)
#   put those jobs' logs there too (ENPU_SLURM_LOG_DIR).
# Usage:  slurm/submit.sh [sbatch options] SCRIPT [script arguments]
#   e.g.  slurm/submit.sh --ntasks=4 --time=2:00:00 slurm/farm.sbatch jobs/llama3-70b.json
# Exit status: sbatch's; 2 when the request cannot fit or the job file (validate: the
# store) cannot be read.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/enpu-slurm.sh"
opts=() script="" log=""
while [ $# -gt 0 ]; do
  case "$1" in
    *.sbatch) script=$1; shift; break ;;
    -o | --output | -o?* | --output=*) log=given ;;
  esac
  opts+=("$1")
  shift
done
[ -n "$script" ] || { echo "usage: slurm/submit.sh [sbatch options] slurm/SCRIPT.sbatch [arguments]" >&2; exit 2; }
enpu_slurm_fits "${opts[@]}"
if [ -z "$log" ]; then
  enpu_slurm_find_bin
  dir=$(enpu_slurm_log_dir "$script" "$@")
  mkdir -p "$dir" || exit 2
  ENPU_SLURM_LOG_DIR=$(cd "$dir" && pwd)
  export ENPU_SLURM_LOG_DIR
  pattern=$(sed -n 's/^#SBATCH --output=//p' "$script" | head -n1)
  opts+=("--output=$ENPU_SLURM_LOG_DIR/${pattern:-slurm-%j.out}")
  echo "submit.sh: log in $ENPU_SLURM_LOG_DIR/${pattern:-slurm-%j.out}" >&2
fi
exec sbatch "${opts[@]}" "$script" "$@"
