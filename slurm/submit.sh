#!/bin/bash
# submit.sh — sbatch with a check first: a request of more --ntasks than the partition has
# CPUs is refused with the reason (enpu_slurm_fits) instead of pending forever.
# Usage:  slurm/submit.sh [sbatch options] SCRIPT [script arguments]
#   e.g.  slurm/submit.sh --ntasks=4 --time=2:00:00 slurm/farm.sbatch jobs/llama3-70b.json
# Exit status: sbatch's; 2 when the request cannot fit.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/enpu-slurm.sh"
opts=()
for a in "$@"; do
  case "$a" in *.sbatch) break ;; esac
  opts+=("$a")
done
enpu_slurm_fits "${opts[@]}"
exec sbatch "$@"
