#!/usr/bin/python3
"""paper.py — the paper's evaluation end to end (`make paper`, slurm/paper.sbatch): runs
the pipeline package src/paper/enpu_paper (its pipeline.py says what it does and its
options: tools/paper.py --help)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src", "paper"))

from enpu_paper.pipeline import main  # noqa: E402  (after the path it is found on)

if __name__ == "__main__":
    sys.exit(main())
