"""Series selection (hosts, jobs, metric names) and raw-sample fetching of :class:`~trainperf.promsource.PrometheusSource`."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import polars as pl

from trainperf import dcgm
from trainperf.promsource._common import (
    DEFAULT_FIELDS,
    HOST_LABELS,
    JOB_LABELS,
    PrometheusQueryError,
    api_seconds,
    epoch_ms,
    is_dcgm,
    name_regex,
    qstr,
    regex_of,
)
from trainperf.promsource.guards import thin_to_step
from trainperf.quality import QualityLog
from trainperf.slurm import expand_nodelist


def _short(expr: str, n: int = 200) -> str:
    return expr if len(expr) <= n else expr[:n] + f"... ({len(expr)} chars)"


class FetchMixin:
    """Selection and ``query_range`` fetching (needs :class:`~trainperf.promsource.http.HttpMixin`)."""

    _quality: list[pl.DataFrame]

    # ---------------------------------------------------------------- selection

    def job_hostnames(self, job_id: str, start: Any, end: Any) -> list[str]:
        """Hosts whose series carry ``job_id`` in one of :data:`JOB_LABELS` during [start, end].

        Raises:
            ValueError: no series carries the job in the window.
        """
        match = [f"{{{k}={json.dumps(str(job_id))}}}" for k in JOB_LABELS]
        hosts: set[str] = set()
        for lab in HOST_LABELS:
            hosts |= set(self.label_values(lab, match, start, end))
        if not hosts:
            raise ValueError(
                f"job {job_id!r} not found in labels {', '.join(JOB_LABELS)} of {self.url} "
                f"between {api_seconds(epoch_ms(start))} and {api_seconds(epoch_ms(end))}"
            )
        return sorted(hosts)

    def _hosts(self, hostnames: Any, job_id: Any, s_ms: int, e_ms: int) -> list[str] | None:
        hosts: set[str] | None = None
        if hostnames is not None:
            if isinstance(hostnames, str):
                hostnames = expand_nodelist(hostnames)
            hosts = set(hostnames)
        if job_id not in (None, ""):
            jh = set(self.job_hostnames(str(job_id), s_ms / 1000, e_ms / 1000))
            hosts = jh if hosts is None else hosts & jh
        return None if hosts is None else sorted(hosts)

    @staticmethod
    def _selectors(
        name: str,
        hosts: Sequence[str] | None,
        *,
        gpu_only: bool = False,
        name_is_regex: bool = False,
    ) -> list[str]:
        """Instant-vector selectors (to be joined with ``or``), one per host-label spelling."""
        base = [f"__name__=~{qstr(name)}" if name_is_regex else f"__name__={qstr(name)}"]
        if gpu_only:
            base += ['gpu!=""', 'GPU_I_ID=""']
        if hosts is None:
            return ["{" + ",".join(base) + "}"]
        rx = regex_of(hosts)
        alts = [f"{lab}=~{qstr(rx)}" for lab in HOST_LABELS]
        plain = name if not name_is_regex else ""
        if not gpu_only and not (plain and is_dcgm(plain)):
            alts.append(f"instance=~{qstr(f'(?:{rx})(?::[0-9]+)?')}")
        return ["{" + ",".join([*base, a]) + "}" for a in alts]

    def metric_names(self, field: int | str, start: Any, end: Any) -> list[str]:
        """Metric names of ``field`` (DCGM id or any alias, or a plain metric name) stored in
        the window, via ``/api/v1/label/__name__/values``."""
        rx = name_regex(field)
        return sorted(self.label_values("__name__", [f"{{__name__=~{qstr(rx)}}}"], start, end))

    # ---------------------------------------------------------------- steps and chunks

    def scrape_interval(self, selectors: Sequence[str], start: Any, end: Any) -> float:
        """Sampling interval of the series (s): median gap between the raw samples of one series
        (``topk(1, last_over_time(...))`` picks it, a range-vector instant query returns its raw
        samples) in the last ``min(window, 6 h)`` of the window; ``default_step_s`` if it has
        fewer than 2 samples there."""
        s_ms, e_ms = epoch_ms(start), epoch_ms(end)
        key = (tuple(selectors), s_ms, e_ms)
        if key in self._step_cache:
            return self._step_cache[key] / 1000
        d = max(1, min(e_ms - s_ms, 6 * 3600 * 1000))
        step = round(self.default_step_s * 1000)
        for sel in selectors:
            expr = f"topk(1, last_over_time({sel}[{d}ms]))"
            try:
                res = self.query(expr, e_ms / 1000)["data"]["result"]
                if not res:
                    continue
                labels = res[0]["metric"]
                exact = (
                    "{" + ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items())) + "}"
                )
                expr = f"{exact}[{d}ms]"
                raw = self.query(expr, e_ms / 1000)["data"]["result"]
                ts = sorted(round(float(t) * 1000) for r in raw for t, _ in r.get("values", []))
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                raise self._bad_shape(expr, exc) from None
            gaps = sorted(b - a for a, b in zip(ts, ts[1:], strict=False) if b > a)
            if gaps:
                step = gaps[len(gaps) // 2]
            break
        self._step_cache[key] = step
        return step / 1000

    def _count_series(self, selectors: Sequence[str], s_ms: int, e_ms: int) -> int:
        w = max(1, e_ms - s_ms)
        expr = "count(" + " or ".join(f"count_over_time({s}[{w}ms])" for s in selectors) + ")"
        try:
            res = self.query(expr, e_ms / 1000)["data"]["result"]
            return int(float(res[0]["value"][1])) if res else 0
        except (KeyError, TypeError, ValueError, IndexError, OverflowError) as exc:
            raise self._bad_shape(expr, exc) from None

    def _bad_shape(self, expr: str, exc: BaseException) -> PrometheusQueryError:
        """A ``success`` answer without the vector/matrix the query returns: one error naming the
        server and the query, never a ``KeyError``."""
        return PrometheusQueryError(
            "/api/v1/query", expr, 200, "bad_response",
            f"the answer is not the expected vector or matrix ({type(exc).__name__}: {exc})",
            server=self.url,
        )  # fmt: skip

    @staticmethod
    def _fresh(selectors: Sequence[str], step_ms: int) -> str:
        """Only samples scraped within the step ending at each evaluation time (no look-back
        repeats): ``x and (timestamp(x) > time() - step + 0.5 ms)``; ``timestamp()`` of a plain
        selector is the sample's own timestamp (of any other expression, the evaluation time), so
        each host-label spelling is filtered on its own."""
        lag = api_seconds(step_ms).rstrip("0") + "0"
        return " or ".join(
            f"({s} and (timestamp({s}) > time() - {lag} + 0.0005))" for s in selectors
        )

    def _bounded_points(self, env: dict, t0: int, t1: int, st: int, where: str) -> dict:
        """At most the points asked for per series (:func:`~trainperf.promsource.guards.thin_to_step`);
        a server that sent more (it ignored ``step``) is flagged, check ``step_ignored``."""
        env, n_over, n_dropped = thin_to_step(env, t0, t1, st)
        if n_over:
            log = QualityLog(category=dcgm.DcgmWarning)
            n_asked = (t1 - t0) // st + 1
            log.add(where, "step_ignored", "excluded",
                    f"the server sent more points than the {n_asked} asked per series (step "
                    f"{st / 1000:g} s ignored?) for {n_over} series: one point per step kept, "
                    f"{n_dropped:,} left out", n_series=n_over, n_samples=n_dropped)  # fmt: skip
            self._quality.append(log.frame())
        return env

    # ---------------------------------------------------------------- raw series

    def fetch(
        self,
        start: Any,
        end: Any,
        *,
        fields: Iterable[int | str] | None = None,
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        step_s: float | None = None,
        max_points: int | None = None,
        exact: bool = True,
    ) -> pl.DataFrame:
        """Samples of ``fields`` in [start, end] as a reader frame (:data:`trainperf.dcgm.SCHEMA`).

        Args:
            start, end: window (datetime / epoch s / ISO 8601), both ends included.
            fields: DCGM field ids or names (any alias; every stored alias is fetched) and/or
                plain metric names (node-exporter counters); default :data:`DEFAULT_FIELDS`.
            hostnames: only these hosts (a list, or a Slurm host list such as ``gpu[001-064]``).
            job_id: only the hosts running this job (see :meth:`job_hostnames`); with
                ``hostnames``, their intersection.
            step_s: evaluation step, s; default: the measured scrape interval
                (:meth:`scrape_interval`) of each metric, or coarser for ``max_points``.
            max_points: point budget per series over the whole window: the step is at least
                ``(end - start) / (max_points - 1)`` (rounded up to a whole ms).
            exact: keep only samples scraped within each step (no look-back repeats; see the
                module docstring); False sends the bare selector (what Grafana does).

        The reader's data checks apply to each chunk (two exporters of one GPU coincide on the step
        times and are merged); their rows accumulate in :meth:`quality`.

        Returns:
            a frame with :data:`trainperf.dcgm.SCHEMA`; ``timestamp`` is the evaluation step time
            (Datetime[us, UTC]), ``value`` Float64 in the exporter's unit. Empty (with the
            schema) when nothing matches.

        Raises:
            PrometheusQueryError, PrometheusUnavailableError: see :meth:`request`.
            ValueError: ``end`` before ``start``, or ``job_id`` not found.
        """
        s_ms, e_ms = epoch_ms(start), epoch_ms(end)
        if e_ms < s_ms:
            raise ValueError(f"end {end!r} is before start {start!r}")
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms)
        if hosts is not None and not hosts:
            return pl.DataFrame(schema=dcgm.SCHEMA)
        frames: list[pl.DataFrame] = []
        for fld in DEFAULT_FIELDS if fields is None else fields:
            for name in self.metric_names(fld, s_ms / 1000, e_ms / 1000):
                sels = self._selectors(name, hosts)
                if step_s is not None:
                    st = max(1, round(step_s * 1000))
                else:
                    st = round(self.scrape_interval(sels, s_ms / 1000, e_ms / 1000) * 1000)
                if max_points:
                    st = max(st, math.ceil((e_ms - s_ms) / max(1, max_points - 1)))
                n_series = self._count_series(sels, s_ms, e_ms)
                if n_series == 0:
                    continue
                per_chunk = max(
                    1, min(self.max_points_per_series, self.max_points_per_request // n_series)
                )
                expr = self._fresh(sels, st) if exact else " or ".join(sels)
                t0 = math.ceil(s_ms / st) * st
                while t0 <= e_ms:
                    t1 = min(e_ms, t0 + (per_chunk - 1) * st)
                    env = self.query_range(expr, t0 / 1000, t1 / 1000, st / 1000)
                    where = f"Prometheus {self.url}, query_range {_short(expr)}"
                    env = self._bounded_points(env, t0, t1, st, where)
                    r = dcgm.read_prometheus_api_reading(env, name=where)
                    if r.quality.height:
                        self._quality.append(r.quality)
                    f = r.frame()
                    if f.height:
                        frames.append(f)
                    t0 = t1 + st
        if not frames:
            return pl.DataFrame(schema=dcgm.SCHEMA)
        out = pl.concat(frames, how="vertical")
        if hosts is not None:
            out = out.filter(pl.col("hostname").is_in(hosts))
        return out
