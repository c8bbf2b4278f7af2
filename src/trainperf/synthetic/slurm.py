"""SYNTHETIC Slurm accounting history of a 100-node x 8-GPU H100 cluster, written as real sacct output.

Nothing here comes from a real cluster. The generator builds a seeded ten-month job history
(2024-06-01 to 2025-03-31, UTC) whose marginals are set to the SAKURAONE workload study's published
ones (:data:`CALIBRATION_TARGETS`), schedules it on 100 nodes without overlaps, and writes it in the
two forms :mod:`trainperf.slurm` reads:

* ``sacct --parsable2`` text with a header (:func:`write_parsable2`), the output of::

      TZ=UTC sacct --parsable2 --allusers --duplicates -S 2024-06-01 -E 2025-04-01 \\
        -o JobID,JobIDRaw,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,\\
      NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,JobName

  (:data:`PARSABLE2_FIELDS`; JobName is last so that a ``|`` in a name can be recovered);
* ``sacct --json`` in the shape of Slurm 22.05 (openapi/dbv0.0.38), the release the SAKURAONE paper
  names (22.05.9), modelled on the real 22.05.8 output in ``tests/data/slurm/real/sacct.json``
  (:func:`write_json`). Unlike that real output, failed jobs carry their true return code (real 22.05
  reports ``SUCCESS``/0 for them; the reader would null it with a warning).

Both hold the same jobs: job records (plain jobs and array tasks ``<array>_<task>`` with their own
``JobIDRaw``), and for every job that started the steps ``.batch`` (first node), ``.extern`` (all
nodes) and ``.0`` (``srun`` on all nodes; some jobs have a short ``.0`` and the main ``.1``). A few
jobs were cancelled before they started (``Start`` ``None``, ``NodeList`` ``None assigned``). Job names
are plain; tests of escaping and delimiters ask for hostile ones (``write_dumps(...,
probe_names=True)``: the longest job is called ``<img src=x onerror=alert(1)>``, others contain
``|``, quotes, ``&``, markup and non-ASCII text), which the bundled demo dumps never carry.

Calibration (exact by construction, not by sampling): job counts per (size bin, final state) are fixed
(:data:`JOB_COUNTS`), GPU-hours per cell are fixed shares of a total (:data:`GPU_HOUR_SHARES`), and
within each cell log-normal run times are scaled so that the cell's GPU-hours hit the target; 8 of
the 59 jobs of 17-32 nodes run longer than a week. The per-job values (sizes within a bin, run times,
submit times, users, names, node lists) are random, from ``numpy.random.default_rng(seed)``.

Run ``python -m trainperf.synthetic.slurm --out data/slurm/synthetic`` to rewrite the bundled dump.

Modules: :mod:`trainperf.synthetic.slurm_history` (the cluster, the calibration, the generator),
:mod:`trainperf.synthetic.slurm_sacct` (the two sacct formats); this one names what they export,
writes both dumps (:func:`write_dumps`) and is the command line.

Sources: the marginals are those of the SAKURAONE paper's section 4.1 (Konishi, Tsubouchi, Tsuruta,
MLSys 2026, arXiv 2604.13600, https://arxiv.org/abs/2604.13600), as relayed by a third-party
summary; not checked against the paper. The formats follow https://slurm.schedmd.com/sacct.html and
the real ``sacct --json`` outputs of Slurm 21.08-25.05 in mila-iqia/SARC
(``tests/functional/jobs/sacct_outputs/slurm_*.json``, ``tests/data/sacct/*.json``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from trainperf.synthetic.slurm_history import (
    CALIBRATION_TARGETS,
    CLUSTER_NODES,
    GPU_HOUR_SHARES,
    GPUS_PER_NODE,
    HOSTILE_NAMES,
    JOB_COUNTS,
    N_JOBS,
    PERIOD_END,
    PERIOD_START,
    SEED,
    XSS_NAME,
    SynthJob,
    SynthStep,
    generate_jobs,
)
from trainperf.synthetic.slurm_sacct import (
    PARSABLE2_FIELDS,
    format_json,
    format_parsable2,
    write_json,
    write_parsable2,
)

__all__ = [
    "SEED",
    "N_JOBS",
    "CLUSTER_NODES",
    "GPUS_PER_NODE",
    "PERIOD_START",
    "PERIOD_END",
    "PARSABLE2_FIELDS",
    "CALIBRATION_TARGETS",
    "JOB_COUNTS",
    "GPU_HOUR_SHARES",
    "HOSTILE_NAMES",
    "XSS_NAME",
    "SynthJob",
    "SynthStep",
    "generate_jobs",
    "format_parsable2",
    "format_json",
    "write_parsable2",
    "write_json",
    "write_dumps",
    "main",
]


def write_dumps(
    out_dir: str | Path, seed: int = SEED, probe_names: bool = False
) -> dict[str, Path]:
    """Generate the history for ``seed`` and write ``sacct_parsable2.txt`` and ``sacct.json``.

    ``probe_names``: the test-only hostile job names (:func:`generate_jobs`); never in the demo.

    Returns:
        ``{"parsable2": path, "json": path}``.
    """
    jobs = generate_jobs(seed, probe_names=probe_names)
    out = Path(out_dir)
    return {
        "parsable2": write_parsable2(jobs, out / "sacct_parsable2.txt"),
        "json": write_json(jobs, out / "sacct.json"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m trainperf.synthetic.slurm --out DIR [--seed N]``."""
    ap = argparse.ArgumentParser(
        prog="python -m trainperf.synthetic.slurm",
        description="Write the SYNTHETIC sacct dumps (parsable2 and 22.05 JSON) of a 100x8-GPU cluster.",
    )
    ap.add_argument("--out", default="data/slurm/synthetic", help="output folder")
    ap.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    ap.add_argument(
        "--probe-names",
        action="store_true",
        help="name jobs with test-only hostile strings (escaping and delimiter tests; not the demo)",
    )
    args = ap.parse_args(argv)
    for kind, path in write_dumps(args.out, args.seed, args.probe_names).items():
        print(f"wrote {kind}: {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
