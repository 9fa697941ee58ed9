"""`python3 -m enpu_paper ...`: the pipeline's main (pipeline.py)."""
import sys

from .pipeline import main

sys.exit(main())
