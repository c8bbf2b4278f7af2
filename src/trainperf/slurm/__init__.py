"""Slurm accounting (``sacct``) readers.

Owns reading accounting dumps into polars frames, checked for damage: two input forms are read into
the same two frames, returned as :class:`SacctData` (``jobs``, ``steps``, ``meta`` and a
data-quality frame ``quality``):

* ``sacct --parsable2`` text (:func:`read_sacct_parsable`, :func:`parse_sacct_parsable`;
  :mod:`trainperf.slurm.parsable`): with a header line, or ``--noheader`` plus the ``-o/--format``
  field list passed as ``fields``; ``|`` or a custom ``--delimiter``; also ``--parsable`` (trailing
  delimiter).
* ``sacct --json`` output of Slurm 21.08 to 25.05 (:func:`read_sacct_json`, :func:`parse_sacct_json`;
  :mod:`trainperf.slurm.sacct_json`).

:func:`read_sacct` picks one of the two by looking at the file; :func:`read_sacct_dumps` merges
several dumps, each isolated (a dump that cannot be read becomes a ``parse_error`` quality row and the
others still load). The per-value grammars are in :mod:`trainperf.slurm.fields`, their vectorised
forms in :mod:`trainperf.slurm.columns`. Job statistics are in :mod:`trainperf.jobs`.

Recommended export (times as epoch seconds, so no time-zone guessing; JobName last, so a ``|`` in a
job name can be recovered)::

    SLURM_TIME_FORMAT=%s sacct --parsable2 --allusers --duplicates -S 2024-06-01 -E 2025-04-01 \\
      -o JobID,JobIDRaw,User,Account,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,\\
    NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,TotalCPU,JobName > sacct.txt

Without ``SLURM_TIME_FORMAT=%s``, sacct prints local wall-clock time of the host that ran it, with no
offset (``_make_time_str_internal`` in ``src/common/parse_time.c``); pass that host's zone as ``tz``
(or run sacct with ``TZ=UTC``). ``--json`` always carries epoch seconds.

Sources:

* sacct manual (fields, ``--parsable2``, ``--delimiter``, ``SLURM_TIME_FORMAT``, job states):
  https://slurm.schedmd.com/sacct.html
* Job state codes: https://slurm.schedmd.com/job_state_codes.html
* TRES strings (``gres/gpu`` and typed ``gres/gpu:<type>`` tracked side by side):
  https://slurm.schedmd.com/tres.html
* Job arrays (``JobID`` ``<array id>_<task id>`` vs ``JobIDRaw``): https://slurm.schedmd.com/job_array.html
* Heterogeneous jobs (``<id>+<offset>``): https://slurm.schedmd.com/heterogeneous_jobs.html
* Host lists (``gpu[001-004,007]``): https://slurm.schedmd.com/hostlist.html , expanded with the
  python-hostlist library (https://www.nsc.liu.se/~kent/python-hostlist/)
* ``--json`` output schema and its changes between versions: https://slurm.schedmd.com/rest_api.html
  and https://github.com/SchedMD/slurm/blob/master/CHANGELOG/ ; real outputs of 21.08 to 25.05 in
  https://github.com/mila-iqia/SARC (``tests/functional/jobs/sacct_outputs``, ``tests/data/sacct``).
"""

from __future__ import annotations

import warnings

from trainperf.slurm.dumps import read_sacct, read_sacct_dumps
from trainperf.slurm.fields import (
    JOB_COLUMNS,
    JOB_STATES,
    STEP_COLUMNS,
    ZERO_EXIT_UNKNOWN,
    SacctData,
    SacctParseError,
    SacctWarning,
    expand_nodelist,
    gpus_from_tres,
    parse_duration,
    parse_exit_code,
    parse_job_id,
    parse_state,
    parse_timelimit,
    parse_tres,
)
from trainperf.slurm.gpu_type import accelerator_family, gpu_type_mismatch
from trainperf.slurm.parsable import BAD_LINES, parse_sacct_parsable, read_sacct_parsable
from trainperf.slurm.sacct_json import parse_sacct_json, read_sacct_json

__all__ = [
    # readers
    "BAD_LINES",
    "JOB_COLUMNS",
    "JOB_STATES",
    "STEP_COLUMNS",
    "ZERO_EXIT_UNKNOWN",
    "SacctData",
    "SacctParseError",
    "SacctWarning",
    "accelerator_family",
    "expand_nodelist",
    "gpu_type_mismatch",
    "gpus_from_tres",
    "parse_duration",
    "parse_exit_code",
    "parse_job_id",
    "parse_sacct_json",
    "parse_sacct_parsable",
    "parse_state",
    "parse_timelimit",
    "parse_tres",
    "read_sacct",
    "read_sacct_dumps",
    "read_sacct_json",
    "read_sacct_parsable",
]

# The job statistics live in trainperf.jobs; trainperf.slurm documented them as its own in 0.1.0.
# An old name still resolves, with a DeprecationWarning naming its home, until the next release.
_MOVED_TO_JOBS = frozenset(
    {
        "FINAL_STATES",
        "GPU_UTIL_FIELD",
        "RUNTIME_EDGES_LOG_S",
        "SIZE_BIN_DTYPE",
        "SIZE_BINS",
        "accounting_summary",
        "cluster_occupancy",
        "gpu_hours_over_time",
        "gpu_utilisation_by_size",
        "job_gpu_utilisation",
        "longest_job_and_task",
        "longest_successful_job",
        "runtime_distribution",
        "runtime_ecdf",
        "runtime_histogram",
        "runtime_tails_by_size",
        "share_by_size",
        "share_by_state",
        "size_bin",
        "successful_jobs",
        "workload_marginals",
    }
)


def __getattr__(name: str):
    if name in _MOVED_TO_JOBS:
        # deferred: a reader does not load the analyses (tests/test_architecture.py); only old names do
        import trainperf.jobs  # noqa: PLC0415

        warnings.warn(
            f"trainperf.slurm.{name} is deprecated: import it from trainperf.jobs "
            f"(trainperf.jobs.{name})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(trainperf.jobs, name)
    raise AttributeError(f"module 'trainperf.slurm' has no attribute {name!r}")
