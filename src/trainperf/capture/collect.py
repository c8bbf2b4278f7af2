"""GPU telemetry sampler on NVML (nvidia-ml-py), written as dcgm-exporter exposition text.

Use it where no DCGM / dcgm-exporter runs (a laptop, a cloud VM, a container without the host
engine) to get a capture that :func:`trainperf.dcgm.read_exposition` reads like a real
dcgm-exporter archive::

    python -m trainperf.capture.collect --interval 1 --out telemetry.prom --duration 600
    python -m trainperf.capture.collect --interval 1 --out telemetry.prom -- python train.py ...

The second form samples while the command runs and exits with the command's exit code.
Without ``--duration`` and without a command it samples until SIGTERM or SIGINT.

Output
------
One block per scrape, formatted in memory, then appended to ``--out`` with a single
``os.write`` on an ``O_APPEND`` descriptor (``--fsync`` adds an ``fsync``). SIGTERM/SIGINT only
set a flag checked between scrapes, so a stopped collector leaves whole blocks only; just a
SIGKILL or power loss in the middle of a write can truncate the last block::

    # SCRAPE 1731000000.123
    # HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
    # TYPE DCGM_FI_DEV_POWER_USAGE gauge
    DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-...",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",Hostname="node1",DCGM_FI_DRIVER_VERSION="580.65.06"} 512.345000 1731000000123

Every sample carries its own timestamp (epoch **milliseconds**, Prometheus text format); the
``# SCRAPE`` line (epoch seconds) is the scrape marker :mod:`trainperf.dcgm` also accepts.
Labels follow dcgm-exporter's render template (``gpu``, ``UUID``, ``pci_bus_id``, ``device``,
``modelName``, host label, ``DCGM_FI_DRIVER_VERSION``; plus ``hpc_job`` when a Slurm job id is
known). The host label is ``Hostname`` as dcgm-exporter wrote it until commit d5e5f51
(2026-05-12); ``--host-label hostname`` gives the new spelling. Values use dcgm-exporter's
number formats: doubles with 6 decimals (``%f``), int64 fields as integers. A value NVML does
not give (not supported, no permission, first GPM interval) is left out, as the current
exporter drops DCGM blank values.

Field mapping
-------------
The DCGM fields written, their units and the NVML call or GPM metric each comes from, and how the
GPM metrics differ from the DCGM profiling fields they stand for: :mod:`trainperf.capture.fields`.

Python API: :func:`format_exposition` (pure: samples in, text out), :class:`NvmlBackend` (reads
NVML), :class:`Collector` (the scrape loop that appends blocks to a file).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

from trainperf.capture.fields import FIELDS, FieldSpec
from trainperf.capture.nvml import Backend, NvmlBackend, NvmlUnavailableError
from trainperf.capture.render import Sample, format_exposition, format_value

__all__ = [
    "FIELDS",
    "Collector",
    "FieldSpec",
    "NvmlBackend",
    "NvmlUnavailableError",
    "Sample",
    "format_exposition",
    "format_value",
    "main",
]


# --------------------------------------------------------------------------------------------
# Scrape loop
# --------------------------------------------------------------------------------------------


class Collector:
    """Scrapes a backend at a fixed interval and appends one exposition block per scrape.

    Each block is written with a single ``os.write`` on a file opened with ``O_APPEND`` and
    flushed (``fsync`` when ``fsync=True``), so concurrent readers and a crash leave only
    whole blocks. Scrapes are scheduled on a fixed grid (``start + k * interval``); a scrape
    that overruns skips the missed ticks rather than bunching up.

    Args:
        backend: :class:`NvmlBackend` or any object with ``read()``, ``hostname``,
            ``driver_version`` (tests use a fake).
        out: file to append to (created if missing; parent folders too).
        interval: seconds between scrapes (> 0).
        host_label, job_id, help_lines: passed to :func:`format_exposition`.
        fsync: ``os.fsync`` after each block (durable on power loss; slower on network FS).
        clock: ``time.time``-like function (tests inject a fake).
    """

    def __init__(
        self,
        backend: Backend,
        out: str | os.PathLike,
        interval: float = 1.0,
        *,
        host_label: str = "Hostname",
        job_id: str | None = None,
        help_lines: bool = True,
        fsync: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.backend = backend
        self.out = os.fspath(out)
        self.interval = float(interval)
        self.host_label = host_label
        self.job_id = job_id
        self.help_lines = help_lines
        self.fsync = fsync
        self.clock = clock
        self.n_scrapes = 0
        self.n_bytes = 0
        parent = os.path.dirname(os.path.abspath(self.out))
        os.makedirs(parent, exist_ok=True)

    def scrape_once(self) -> str:
        """Read the backend once and append the block; returns the text written."""
        now_ms = int(self.clock() * 1000)
        text = format_exposition(
            self.backend.read(),
            self.backend.hostname,
            host_label=self.host_label,
            driver_version=self.backend.driver_version,
            job_id=self.job_id,
            scrape_time_ms=now_ms,
            help_lines=self.help_lines,
        )
        if text:
            data = text.encode("utf-8")
            fd = os.open(self.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            self.n_bytes += len(data)
        self.n_scrapes += 1
        return text

    def run(
        self,
        stop: threading.Event,
        duration: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> int:
        """Scrape until ``stop`` is set, ``duration`` seconds have passed or ``until()`` is true.

        A first scrape is taken at once and a last one when the loop ends (so the energy
        counter covers the whole run). Returns the number of scrapes.
        """
        start = self.clock()
        deadline = start + duration if duration is not None else math.inf
        self.scrape_once()
        k = 1
        while not stop.is_set() and not (until and until()):
            now = self.clock()
            if now >= deadline:
                break
            next_t = start + k * self.interval
            if next_t <= now:  # overran: skip missed ticks
                k = int((now - start) / self.interval) + 1
                next_t = start + k * self.interval
            wait = min(next_t, deadline) - now
            if stop.wait(max(wait, 0.0)):
                break
            if until and until():
                break
            if self.clock() >= deadline:
                break
            self.scrape_once()
            k += 1
        self.scrape_once()
        return self.n_scrapes


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m trainperf.capture.collect",
        description=(
            "Sample GPU telemetry through NVML (incl. Hopper GPM profiling metrics) and append "
            "dcgm-exporter exposition text with per-sample timestamps. Optionally wrap a "
            "command: everything after '--' is run and sampled until it exits."
        ),
        epilog="Example: python -m trainperf.capture.collect --interval 1 --out run/telemetry.prom -- "
        "python -m trainperf.capture.smoke --preset gpt2-medium --minutes 4 --out-dir run/gpt_smoke",
    )
    p.add_argument("--out", required=True, help="exposition file to append to (created if missing)")
    p.add_argument(
        "--interval", type=float, default=1.0, help="seconds between scrapes (default 1)"
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many seconds (default: no limit)",
    )
    p.add_argument(
        "--gpus", default=None, help="NVML GPU indices to sample, e.g. 0,1 (default all)"
    )
    p.add_argument("--no-gpm", action="store_true", help="do not read GPM profiling metrics")
    p.add_argument("--hostname", default=None, help="host label value (default: this host's name)")
    p.add_argument(
        "--host-label",
        default="Hostname",
        choices=("Hostname", "hostname"),
        help="host label name: dcgm-exporter wrote 'Hostname' until 2026-05, 'hostname' since",
    )
    p.add_argument(
        "--job-id",
        default=os.environ.get("SLURM_JOB_ID"),
        help='adds hpc_job="ID" to every series (default: $SLURM_JOB_ID if set)',
    )
    p.add_argument("--no-help", action="store_true", help="omit # HELP / # TYPE lines")
    p.add_argument("--fsync", action="store_true", help="fsync after every scrape")
    p.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...] to run and sample"
    )
    return p


def _exit_code(rc: int) -> int:
    """Popen returncode -> shell-style exit status (killed by signal N -> 128 + N)."""
    return 128 - rc if rc < 0 else rc


def main(
    argv: Sequence[str] | None = None, backend_factory: Callable[..., Backend] | None = None
) -> int:
    """CLI entry point; returns the exit status (the wrapped command's, when one is given).

    Args:
        argv: arguments (default ``sys.argv[1:]``).
        backend_factory: called as ``factory(gpus=..., use_gpm=..., hostname=...)``; default
            :class:`NvmlBackend` (tests pass a fake).
    """
    args = _parser().parse_args(argv)
    cmd = list(args.command)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if args.command and not cmd:
        print(
            "trainperf.capture.collect: error: '--' given but no command after it", file=sys.stderr
        )
        return 2
    gpus = None
    if args.gpus:
        try:
            gpus = [int(x) for x in args.gpus.split(",") if x.strip()]
        except ValueError:
            print(
                f"trainperf.capture.collect: error: --gpus {args.gpus!r}: expected e.g. 0,1",
                file=sys.stderr,
            )
            return 2
    factory = backend_factory or NvmlBackend
    try:
        backend = factory(gpus=gpus, use_gpm=not args.no_gpm, hostname=args.hostname)
    except NvmlUnavailableError as exc:
        print(f"trainperf.capture.collect: error: {exc}", file=sys.stderr)
        return 2
    try:
        collector = Collector(
            backend,
            args.out,
            args.interval,
            host_label=args.host_label,
            job_id=args.job_id or None,
            help_lines=not args.no_help,
            fsync=args.fsync,
        )
    except ValueError as exc:
        backend.close()
        print(f"trainperf.capture.collect: error: {exc}", file=sys.stderr)
        return 2

    stop = threading.Event()
    proc: subprocess.Popen | None = None
    received: list[int] = []

    def on_signal(signum, _frame):
        received.append(signum)
        if proc is not None and proc.poll() is None:
            # forward to the wrapped command; keep sampling until it exits
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass
        else:
            stop.set()

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    rc = 0
    try:
        if cmd:
            try:
                proc = subprocess.Popen(cmd)
            except OSError as exc:
                print(
                    f"trainperf.capture.collect: error: cannot run {cmd[0]!r}: {exc}",
                    file=sys.stderr,
                )
                return 127
            collector.run(stop, args.duration, until=lambda: proc.poll() is not None)
            if proc.poll() is None:  # --duration ran out first: leave the command alone
                print(
                    f"trainperf.capture.collect: --duration reached; waiting for {cmd[0]!r} to exit "
                    "without sampling",
                    file=sys.stderr,
                )
            rc = _exit_code(proc.wait())
        else:
            collector.run(stop, args.duration)  # SIGTERM/SIGINT end it cleanly: status 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        backend.close()
        print(
            f"trainperf.capture.collect: {collector.n_scrapes} scrapes, {collector.n_bytes} bytes -> {args.out}",
            file=sys.stderr,
        )
    return rc


if __name__ == "__main__":
    sys.exit(main())
