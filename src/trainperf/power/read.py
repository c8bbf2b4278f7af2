"""One MLPerf Training power log (``power/result_N/node_K.txt`` or ``sw_K.txt``) into checked readings.

The format is the one mlcommons/logging's power example writes
(``mlperf_logging/mllog/examples/power/power_measurement.py``) and its result summarizer reads
(``result_summarizer._compute_power_node`` / ``_compute_power_sw``): ``:::MLLOG`` lines, each one JSON
object with ``time_ms`` (Unix epoch milliseconds), ``key`` and ``value``:

* ``power_measurement_start`` / ``power_measurement_stop``: the measurement window;
* ``power_reading``: one reading, ``value`` in W, ``metadata.host`` the node measured;
* ``conversion_eff``: the AC/DC conversion efficiency that turns a PSU's AC input into the DC power
  of the node (MLPerf power rules, mlcommons/training_policies ``power_measurement.adoc``, "Measure
  at the PSUs"); the summarizer takes 1.0 without one;
* ``interconnect_power_est``: an interconnect's estimated power in W (``sw_*.txt``), the estimate
  the rules allow for a switch ("Measure or Estimate Interconnects").

Own parser rather than mlperf-logging's ``mlp_parser.parse_file``: that one keeps no per-value
checks and drops the line a value came from, which every warning here names.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from trainperf.errors import DataWarning

__all__ = ["READING_SCHEMA", "MAX_READING_W", "PowerLog", "PowerLogWarning", "read_power_log"]

#: A reading above this (W) is not a node's power: 1 MW is ten times a 72-GPU rack's ~120 kW
#: (NVIDIA GB200 NVL72 datasheet), so only a damaged value (a unit slip, mW for W) reaches it.
MAX_READING_W = 1.0e6

_TOKEN = ":::MLLOG"

READING_SCHEMA: dict[str, pl.DataType] = {
    "time_ms": pl.Float64(),  # Unix epoch milliseconds
    "power_w": pl.Float64(),  # W as logged (AC at the PSU when conversion_eff < 1)
    "host": pl.String(),  # metadata.host, null when absent
    "line": pl.Int64(),  # 1-based line in the file
}
"""Columns of :attr:`PowerLog.readings` (kept readings only, in file order)."""


class PowerLogWarning(DataWarning):
    """Damage found in an MLPerf power log (excluded, corrected or flagged)."""


@dataclass
class Issue:
    """One check that fired in one file, before :mod:`trainperf.power.energy` groups them."""

    check: str
    action: str
    line: int | None
    n_samples: int
    detail: str


@dataclass
class PowerLog:
    """What :func:`read_power_log` returns for one file.

    Attributes:
        path: the file.
        kind: ``node`` (``node_*.txt``) or ``switch`` (``sw_*.txt``; any other name counts as node).
        readings: kept ``power_reading`` events, :data:`READING_SCHEMA`.
        start_ms, stop_ms: ``power_measurement_start`` / ``_stop`` times (ms), None when not logged.
        start_line, stop_line: their lines (the summarizer orders equal times by line).
        conversion_eff: the last valid ``conversion_eff`` (what the summarizer takes), None if none.
        interconnect_power_est_w: the first ``interconnect_power_est`` (W), None if none.
        issues: checks that fired (:class:`Issue`), grouped into quality rows by the caller.
    """

    path: Path
    kind: str
    readings: pl.DataFrame
    start_ms: float | None = None
    stop_ms: float | None = None
    start_line: int | None = None
    stop_line: int | None = None
    conversion_eff: float | None = None
    interconnect_power_est_w: float | None = None
    issues: list[Issue] = field(default_factory=list)


def _number(v) -> float | None:
    """``v`` as a finite float, None for anything else (bool, text, NaN, inf, null)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _kind(path: Path) -> str:
    return "switch" if path.name.startswith("sw_") else "node"


class _Found:
    """Counts of one check in one file: first line, how many, the first example."""

    def __init__(self) -> None:
        self.first: dict[str, tuple[int, str, str]] = {}
        self.count: dict[str, int] = {}

    def hit(self, check: str, action: str, line: int, example: str) -> None:
        self.first.setdefault(check, (line, action, example))
        self.count[check] = self.count.get(check, 0) + 1

    def issues(self) -> list[Issue]:
        return [
            Issue(check, action, line, self.count[check], f"{self.count[check]} x {example}")
            for check, (line, action, example) in self.first.items()
        ]


def read_power_log(path: str | Path) -> PowerLog:
    """Read one power log and check every value it holds.

    Checks (each an :class:`Issue` naming the first line; :mod:`trainperf.power.energy` turns them
    into quality rows and warnings): ``parse_error`` (a ``:::MLLOG`` line that is not one JSON
    object with a numeric ``time_ms`` and a ``key``: excluded); ``out_of_range`` (a
    ``power_reading`` value that is not a number, negative, or above :data:`MAX_READING_W`:
    excluded); ``conversion_eff`` (missing: 1.0 taken, as the summarizer does, flagged; outside
    (0, 1]: excluded; two different values: the last taken, as the summarizer does, flagged);
    ``measurement_marker`` (``power_measurement_start``/``_stop`` logged more than once: the last
    taken, as the summarizer's loop does). A file that cannot be read gives a log with no readings
    and one ``parse_error`` issue, never an exception.

    Args:
        path: a ``node_*.txt`` or ``sw_*.txt`` file.

    Returns:
        :class:`PowerLog`.
    """
    path = Path(path)
    found = _Found()
    times: list[float] = []
    watts: list[float] = []
    hosts: list[str | None] = []
    lines: list[int] = []
    log = PowerLog(path, _kind(path), pl.DataFrame(schema=READING_SCHEMA))
    effs: list[tuple[int, float]] = []
    bad_effs: list[tuple[int, object]] = []
    starts: list[tuple[int, float]] = []
    stops: list[tuple[int, float]] = []
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        log.issues.append(Issue("parse_error", "excluded", None, 0, f"unreadable: {exc}"))
        return log
    for lineno, raw in enumerate(text.splitlines(), start=1):
        at = raw.find(_TOKEN)
        if at < 0:
            continue
        try:
            obj = json.loads(raw[at + len(_TOKEN) :])
        except ValueError:
            found.hit("parse_error", "excluded", lineno, "line is not one JSON object")
            continue
        t = _number(obj.get("time_ms")) if isinstance(obj, dict) else None
        key = obj.get("key") if isinstance(obj, dict) else None
        if t is None or not isinstance(key, str):
            found.hit(
                "parse_error", "excluded", lineno, "event without a numeric time_ms and a key"
            )
            continue
        value = obj.get("value")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        if key == "power_reading":
            w = _number(value)
            if w is None or w < 0 or w > MAX_READING_W:
                found.hit("out_of_range", "excluded", lineno, f"power_reading {value!r} W")
                continue
            host = meta.get("host")
            times.append(t)
            watts.append(w)
            hosts.append(None if host is None else str(host))
            lines.append(lineno)
        elif key == "power_measurement_start":
            starts.append((lineno, t))
        elif key == "power_measurement_stop":
            stops.append((lineno, t))
        elif key == "conversion_eff":
            e = _number(value)
            if e is None or not 0 < e <= 1:
                bad_effs.append((lineno, value))  # flagged below, naming the value used instead
            else:
                effs.append((lineno, e))
        elif key == "interconnect_power_est" and log.interconnect_power_est_w is None:
            w = _number(value)
            if w is None or w < 0 or w > MAX_READING_W:
                found.hit("out_of_range", "excluded", lineno, f"interconnect_power_est {value!r} W")
            else:
                log.interconnect_power_est_w = w
    log.readings = pl.DataFrame(
        {"time_ms": times, "power_w": watts, "host": hosts, "line": lines}, schema=READING_SCHEMA
    )
    for name, marks in (("power_measurement_start", starts), ("power_measurement_stop", stops)):
        if len(marks) > 1:
            found.hit(
                "measurement_marker",
                "flagged",
                marks[1][0],
                f"{name} logged {len(marks)} times, the last taken",
            )
    if starts:
        log.start_line, log.start_ms = starts[-1]
    if stops:
        log.stop_line, log.stop_ms = stops[-1]
    for lineno, value in bad_effs:
        used = (
            f"the last valid one, {effs[-1][1]:g}, is used"
            if effs
            else "1.0 is used (DC power assumed: no valid conversion_eff in the file)"
        )
        found.hit(
            "conversion_eff",
            "excluded",
            lineno,
            f"conversion_eff {value!r} not in (0, 1]: ignored; {used}",
        )
    if effs:
        log.conversion_eff = effs[-1][1]
        if len({e for _, e in effs}) > 1:
            found.hit(
                "conversion_eff",
                "flagged",
                effs[1][0],
                "conversion_eff logged with different values, the last taken",
            )
    elif not bad_effs and (log.kind == "node" or log.interconnect_power_est_w is not None):
        found.hit(
            "conversion_eff", "flagged", 1, "no conversion_eff logged: 1.0 taken (DC power assumed)"
        )
    log.issues.extend(found.issues())
    return log
