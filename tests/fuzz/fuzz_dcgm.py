"""Fuzz the DCGM readers with seeded mutations of the bundled fixtures (issue 15).

Usage (by hand; each reader gets ``--n`` inputs, default 20,000)::

    .venv/bin/python tests/fuzz/fuzz_dcgm.py                    # every reader
    .venv/bin/python tests/fuzz/fuzz_dcgm.py exposition dmon --n 20000 --seed 1

Prints, per reader, how many inputs were read, how many raised the product's own errors
(:class:`trainperf.dcgm.DcgmFormatError`, naming the file and line) and how many raised anything
else (goal: 0). Exit status 1 when any reader had other exceptions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import mutate  # noqa: E402

from trainperf import dcgm  # noqa: E402

D = HERE.parent / "data" / "dcgm"
REAL = HERE.parents[1] / "data" / "telemetry"
T0 = 1_767_225_600


def _seeds(*names: str) -> list[bytes]:
    return [(D / n).read_bytes() for n in names]


def _head(path: Path, n_lines: int) -> bytes:
    return b"\n".join(path.read_bytes().split(b"\n")[:n_lines]) + b"\n"


READERS = {
    "exposition": (
        lambda: _seeds("scrape_single.prom", "archive_mixed_hostname.prom", "per_sample_ts.prom",
                       "nvlink_two_fields.prom", "no_prof_host.prom", "bad_labels.prom")
        + [_head(next(REAL.glob("h200_2gpu_*")) / "telemetry.prom", 200)],
        lambda b: dcgm.read_exposition(b, timestamp=T0),
        mutate.mutate_bytes,
    ),
    "dmon": (
        lambda: _seeds("dmon_untimed.txt", "dmon_timed.txt", "bad_dmon.txt"),
        lambda b: dcgm.read_dmon(b, hostname="n1", start=T0, interval=1),
        mutate.mutate_bytes,
    ),
    "prometheus_api": (
        lambda: _seeds("api_vector.json", "api_matrix.json"),
        lambda b: dcgm.read_prometheus_api(b),
        mutate.mutate_json,
    ),
    "csv_long": (lambda: _seeds("long.csv"), lambda b: dcgm.read_csv_long(b), mutate.mutate_bytes),
    "grafana_csv": (
        lambda: _seeds("grafana_wide.csv", "grafana_formatted.csv"),
        lambda b: dcgm.read_grafana_csv(b),
        mutate.mutate_bytes,
    ),
}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("readers", nargs="*", help=f"some of {', '.join(READERS)} (default: all)")
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    unknown = sorted(set(a.readers) - set(READERS))
    if unknown:
        ap.error(f"unknown readers {unknown}; known: {', '.join(READERS)}")
    total = 0
    for name in a.readers or list(READERS):
        seeds, read, mut = READERS[name]
        total += mutate.run(name, seeds(), read, a.n, a.seed, mut)
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
