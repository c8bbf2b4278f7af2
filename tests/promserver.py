"""A throw-away local Prometheus server holding SYNTHETIC telemetry (for tests and benchmarks).

* :func:`write_openmetrics`: the :mod:`trainperf.synthetic.telemetry` telemetry as OpenMetrics text, the
  input of ``promtool tsdb create-blocks-from openmetrics`` (timestamps in seconds, ``# EOF`` last;
  https://prometheus.io/docs/prometheus/latest/storage/#backfilling-from-openmetrics-format).
* :class:`LocalPrometheus`: backfill a TSDB with ``promtool``, start ``prometheus`` on a free
  127.0.0.1 port with ``--storage.tsdb.retention.time=100y`` (without it blocks older than 15 days
  are deleted at start-up), wait for ``/-/ready``, stop it (terminate, then kill) on exit.

Needs the ``prometheus`` and ``promtool`` binaries (Debian 12: ``apt-get install prometheus``,
2.42); :func:`binaries_missing` says which are absent.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from trainperf.synthetic import telemetry as synthetic

__all__ = ["LocalPrometheus", "binaries_missing", "write_openmetrics"]

CONFIG = "global:\n  scrape_interval: 1h\nscrape_configs: []\n"
"""Server configuration: nothing is scraped; the data are the backfilled blocks."""


def binaries_missing() -> list[str]:
    """Names among ``prometheus``, ``promtool`` not found on PATH."""
    return [b for b in ("prometheus", "promtool") if shutil.which(b) is None]


def write_openmetrics(cfg: Any, phases: Any, path: str | os.PathLike) -> int:
    """Write :func:`trainperf.synthetic.write_exposition`'s telemetry as OpenMetrics for backfill.

    The exposition archive (one ``name{labels} value timestamp_ms`` line per sample, scrape by
    scrape) is written to a temporary file and rewritten line by line: comment and ``# SCRAPE``
    lines dropped, the millisecond timestamp turned into exact decimal seconds, ``# EOF``
    appended. No ``# TYPE`` lines: every family is ``unknown`` (counters keep their names, e.g.
    ``node_network_transmit_bytes_total``). Each series' samples are in time order, as promtool
    needs. Values are identical to :func:`trainperf.synthetic.iter_frames`'.

    Args:
        cfg: :class:`trainperf.synthetic.SyntheticConfig`.
        phases: :func:`trainperf.telemetry.phases_from_log` (the run to follow).
        path: output file.

    Returns:
        the number of samples written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with tempfile.TemporaryDirectory(prefix="om-", dir=path.parent) as tmp:
        prom = synthetic.write_exposition(cfg, phases, Path(tmp) / "x.prom")
        with open(prom, encoding="utf-8") as src, open(path, "w", encoding="utf-8") as out:
            buf: list[str] = []
            for line in src:
                if line.startswith("#"):
                    continue
                head, ms = line.rstrip("\n").rsplit(" ", 1)
                t = int(ms)
                buf.append(f"{head} {t // 1000}.{t % 1000:03d}\n")
                n += 1
                if len(buf) >= 100_000:
                    out.writelines(buf)
                    buf.clear()
            out.writelines(buf)
            out.write("# EOF\n")
    return n


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalPrometheus:
    """A ``prometheus`` process serving a TSDB folder on 127.0.0.1 (a context manager).

    Args:
        tsdb: the TSDB folder (e.g. made by :meth:`from_openmetrics`).
        workdir: where the config and log go (default: the TSDB's parent).
        port: TCP port; default a free one.

    Attributes:
        url: ``http://127.0.0.1:<port>`` once started.
        log_path: the server's combined stdout/stderr.
    """

    def __init__(
        self, tsdb: str | os.PathLike, workdir: str | os.PathLike | None = None, port: int = 0
    ):
        self.tsdb = Path(tsdb)
        self.workdir = Path(workdir) if workdir else self.tsdb.parent
        self.port = port
        self.url = ""
        self.log_path = self.workdir / "prometheus.log"
        self.proc: subprocess.Popen | None = None

    @classmethod
    def from_openmetrics(
        cls, openmetrics: str | os.PathLike, workdir: str | os.PathLike, **kw: Any
    ) -> LocalPrometheus:
        """Backfill ``workdir/tsdb`` from an OpenMetrics file with ``promtool tsdb
        create-blocks-from openmetrics`` (not started yet).

        Raises:
            FileNotFoundError: promtool not on PATH.
            RuntimeError: promtool failed (its output is in the message).
        """
        promtool = shutil.which("promtool")
        if promtool is None:
            raise FileNotFoundError("promtool not on PATH (Debian: apt-get install prometheus)")
        wd = Path(workdir)
        wd.mkdir(parents=True, exist_ok=True)
        tsdb = wd / "tsdb"
        r = subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(tsdb)],
            capture_output=True,
            text=True,
        )
        if r.returncode:
            raise RuntimeError(f"promtool backfill failed ({r.returncode}): {r.stderr[-2000:]}")
        return cls(tsdb, wd, **kw)

    def start(self, timeout_s: float = 60.0) -> str:
        """Start the server and wait until ``/-/ready`` answers 200; returns the URL.

        Raises:
            FileNotFoundError: prometheus not on PATH.
            RuntimeError: the process exited or was not ready within ``timeout_s`` (log tail in
                the message); the process is stopped first.
        """
        exe = shutil.which("prometheus")
        if exe is None:
            raise FileNotFoundError("prometheus not on PATH (Debian: apt-get install prometheus)")
        cfg = self.workdir / "prometheus.yml"
        cfg.write_text(CONFIG)
        for _ in range(3):  # a free port can be taken between the probe and the bind
            port = self.port or _free_port()
            log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
            self.proc = subprocess.Popen(
                [
                    exe,
                    f"--config.file={cfg}",
                    f"--storage.tsdb.path={self.tsdb}",
                    "--storage.tsdb.retention.time=100y",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            self._log = log
            self.url = f"http://127.0.0.1:{port}"
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    with opener.open(self.url + "/-/ready", timeout=2) as r:
                        if r.status == 200:
                            return self.url
                except OSError:
                    pass
                time.sleep(0.1)
            tail = self.log_tail()
            exited = self.proc.poll() is not None
            self.stop()
            if not (exited and "address already in use" in tail and not self.port):
                raise RuntimeError(f"prometheus not ready at {self.url}: {tail}")
        raise RuntimeError(f"prometheus could not bind a port: {self.log_tail()}")

    def log_tail(self, n: int = 2000) -> str:
        """The last ``n`` characters of the server log."""
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Terminate the process (kill after 10 s) and close its log; idempotent."""
        p, self.proc = self.proc, None
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
        log = getattr(self, "_log", None)
        if log is not None and not log.closed:
            log.close()

    def __enter__(self) -> LocalPrometheus:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
