"""enpu_paper — the paper reproduction's pipeline (`make paper`, slurm/paper.sbatch): the
jobs each model runs, the stages that run them incrementally, and the manifest each model
hands `enpu report paper`. Modules, bottom up: inputs (the pipeline file, the runs, the
job files), runner (a stage's key, stamp and timings, the running command), stages (what
each stage runs), manifest (built and schema-checked), pipeline (the models, the report
and main). Run it as tools/paper.py or `python3 -m enpu_paper` with src/paper on the path.

It stays Python: it is orchestration (processes, mpirun or srun, signals forwarded,
content hashes, JSON in and out), none of which the product's C needs, and it calls the
C only through the `enpu` binary, so nothing of the paper enters the product."""
