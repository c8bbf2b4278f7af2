"""Fuzz the sacct ``--parsable2`` reader with inputs mutated from the bundled fixtures (issue 15).

Usage::

    .venv/bin/python tests/fuzz/fuzz_sacct_parsable.py                # 20,000 inputs, seed 0
    .venv/bin/python tests/fuzz/fuzz_sacct_parsable.py -n 2000 --seed 7

Each input is one of the parsable fixtures (``tests/data/slurm/real``: the 22.05.8 dumps with a
header, without one (epoch times, ``^|^``), the NODE_FAIL dump; ``tests/data/slurm/synthetic``: the
traps, ``--parsable``, missing AllocTRES; 150 lines of the bundled SYNTHETIC history) with 1-4
mutations: truncation, byte flips, invalid UTF-8, CR/LF changes, duplicated, swapped and deleted
lines, and field-level ones (a value replaced by a huge/NaN/Inf number, a sentinel or a word of
another field, emptied, duplicated, a delimiter or a newline inserted or removed). The file goes
through :func:`trainperf.slurm.read_sacct_parsable` (``bad_lines`` ``"raise"`` and ``"skip"`` in
turn) and, one loaded input in ten, through the job statistics of :mod:`trainperf.jobs`.
``--reference`` fuzzes the line-by-line reader it replaced instead (the count before issue 15).

Printed: inputs, exceptions that are not the product's own (goal 0; by type with an example and a
traceback), the product's own errors (each must name the file), and the data-quality checks seen.
Exit status 1 when anything but the product's own types escaped.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # thousands of tiny frames: threads only cost
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sacct_mutations as M  # noqa: E402

from trainperf import jobs, slurm  # noqa: E402
from trainperf.errors import TrainperfError  # noqa: E402

REAL_FIELDS = (
    "JobID,JobIDRaw,User,Partition,State,ExitCode,Submit,Start,End,Elapsed,Timelimit,TotalCPU,"
    "NNodes,NCPUS,NodeList,AllocTRES,ReqTRES,MaxRSS,JobName"
)
SYN_FIELDS = (
    "JobID,JobIDRaw,State,ExitCode,Start,End,Elapsed,TimelimitRaw,NNodes,NodeList,AllocTRES,JobName"
)


def sources() -> list[tuple[str, bytes, dict]]:
    real, syn = M.SLURM / "real", M.SLURM / "synthetic"
    bundled = (M.ROOT / "data" / "slurm" / "synthetic" / "sacct_parsable2.txt").read_bytes()
    out = [
        ("real", (real / "sacct_parsable2.txt").read_bytes(), {}),
        ("real_middle", (real / "sacct_parsable2_jobname_middle.txt").read_bytes(), {}),
        (
            "real_epoch",
            (real / "sacct_noheader_epoch_delim.txt").read_bytes(),
            {"fields": REAL_FIELDS, "delimiter": "^|^"},
        ),
        ("node_fail", (real / "damage" / "sacct_parsable2.txt").read_bytes(), {}),
        ("traps", (syn / "parsable2_traps.txt").read_bytes(), {}),
        ("trailing", (syn / "parsable_trailing.txt").read_bytes(), {}),
        ("no_tres", (syn / "parsable2_missing_alloctres.txt").read_bytes(), {}),
        (
            "caret",
            (syn / "noheader_epoch_caret.txt").read_bytes(),
            {"fields": SYN_FIELDS, "delimiter": "^|^"},
        ),
        ("bundled", b"\n".join(bundled.split(b"\n")[:150]), {}),
    ]
    return out


def field_mutation(delimiter: bytes):
    def fn(data: bytes, rng: random.Random) -> bytes:
        lines = data.split(b"\n")
        if not lines:
            return data
        i = rng.randrange(len(lines))
        parts = lines[i].split(delimiter)
        k = rng.randrange(len(parts))
        what = rng.randrange(7)
        if what == 0:
            parts[k] = rng.choice(M.NUMBERS).encode()
        elif what == 1:
            parts[k] = rng.choice(M.WORDS).encode()
        elif what == 2:
            parts[k] = b""
        elif what == 3:
            parts.insert(k, parts[k])  # a duplicated field: one delimiter too many
        elif what == 4 and len(parts) > 1:
            parts[k : k + 2] = [parts[k] + parts[k + 1] if k + 1 < len(parts) else parts[k]]
        elif what == 5:
            parts[k] = parts[k] + b"\n" + rng.choice(M.WORDS).encode()
        else:
            parts[k] = parts[rng.randrange(len(parts))]  # a value of another field
        lines[i] = delimiter.join(parts)
        return b"\n".join(lines)

    return fn


def exercise(d: slurm.SacctData) -> None:
    """The statistics a notebook runs on a dump."""
    j, s = d.jobs, d.steps
    jobs.accounting_summary(j, s)
    jobs.longest_job_and_task(j, s)
    jobs.longest_successful_job(j)
    jobs.share_by_state(j)
    jobs.share_by_size(j)
    jobs.runtime_tails_by_size(j)
    jobs.runtime_distribution(j)
    jobs.runtime_ecdf(j)
    jobs.workload_marginals(j)
    jobs.gpu_hours_over_time(j, "1d")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000, help="number of inputs (default 20000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--reference",
        action="store_true",
        help="fuzz the line-by-line reader this one replaced (tests/slurm_reference.py), for the "
        "count before issue 15 (it has no bad_lines: every input in raise mode, no statistics)",
    )
    args = ap.parse_args(argv)
    if args.reference:
        sys.path.insert(0, str(HERE.parent))
        import slurm_reference  # noqa: PLC0415  only with --reference, from tests/

        def read(path, bad_lines, **kw):
            return slurm_reference.read_sacct_parsable(path, **kw)
    else:
        read = slurm.read_sacct_parsable
    rng = random.Random(args.seed)
    srcs = sources()
    uncaught: dict[str, list] = collections.defaultdict(list)
    product: collections.Counter = collections.Counter()
    unnamed: list[str] = []
    checks: collections.Counter = collections.Counter()
    loaded = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sacct_fuzz.txt"
        for i in range(args.n):
            name, data, kw = srcs[rng.randrange(len(srcs))]
            delim = kw.get("delimiter", "|").encode()
            path.write_bytes(M.mutate(data, rng, [field_mutation(delim)] * 3))
            mode = "raise" if i % 2 == 0 else "skip"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    d = read(path, bad_lines=mode, **kw)
                    if i % 10 == 0 and not args.reference:  # statistics on 1 in 10 (they cost more)
                        exercise(d)
                loaded += 1
                if not args.reference:
                    checks.update(d.quality.get_column("check").to_list())
            except TrainperfError as exc:
                product[type(exc).__name__] += 1
                if str(path) not in str(exc):
                    unnamed.append(f"{name} #{i}: {exc}")
            except Exception as exc:  # noqa: BLE001 (what the fuzz counts)
                key = f"{type(exc).__name__} ({name}, bad_lines={mode})"
                if len(uncaught[key]) < 2:
                    uncaught[key].append((i, str(exc)[:300], traceback.format_exc()[-1500:]))
                else:
                    uncaught[key].append((i, None, None))
            if (i + 1) % 5000 == 0:
                print(f"... {i + 1} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    n_uncaught = sum(len(v) for v in uncaught.values())
    which = "the old line-by-line reader" if args.reference else "read_sacct_parsable"
    print(f"sacct parsable2 fuzz of {which}: {args.n} inputs (seed {args.seed}), {loaded} loaded")
    print(f"exceptions that are not the product's own: {n_uncaught}")
    for key, items in sorted(uncaught.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):6d}  {key}")
        for i, msg, tb in items[:1]:
            print(f"          input #{i}: {msg}\n{tb}")
    print(f"product errors (SacctParseError etc.): {sum(product.values())} {dict(product)}")
    print(f"product errors not naming the file: {len(unnamed)}")
    for u in unnamed[:5]:
        print(f"  {u}")
    print(f"data-quality checks that fired: {dict(checks.most_common())}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 1 if n_uncaught or unnamed else 0


if __name__ == "__main__":
    sys.exit(main())
