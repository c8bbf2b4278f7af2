"""Statistics pushed down to Prometheus as PromQL (only results cross the wire) for :class:`~trainperf.promsource.PrometheusSource`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from trainperf import dcgm, telemetry
from trainperf.promsource._common import HOST_LABELS, STAT_LABEL, epoch_ms
from trainperf.telemetry import GPU_STATS_CATEGORICAL


class PushdownMixin:
    """``window_stats``, ``phase_stats`` and ``job_means`` (needs the HTTP and fetch mixins)."""

    # ---------------------------------------------------------------- push-down

    def _window_frame(self, expr: str, name: str, at_ms: int) -> pl.DataFrame:
        doc = self.query(expr, at_ms / 1000)
        where = f"Prometheus {self.url}, query {expr[:200]}"
        r = dcgm.read_prometheus_api_reading(doc, metric=name, checks=False, name=where)
        if r.quality.height:  # a partial response (Thanos warnings), a failed part
            self._quality.append(r.quality)
        f = r.frame()  # aggregates, not samples
        return f.with_columns(
            pl.col("labels").str.json_path_match(f"$.{STAT_LABEL}").alias("_stat")
        )

    def window_stats(
        self,
        start: Any,
        end: Any,
        *,
        fields: Iterable[int | str] = (1004, 1002, 1005, 155, 100),
        level: str = "gpu",
        quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        _names: Mapping[Any, list[str]] | None = None,
        _hosts: list[str] | None | bool = False,
    ) -> pl.DataFrame:
        """Per-GPU or per-node statistics of DCGM fields over [start, end), computed by Prometheus.

        GPU-entity series only (``gpu`` label set, no MIG ``GPU_I_ID``), like
        :func:`trainperf.telemetry.phase_stats`. One instant query per metric name, at
        ``end - 1 ms`` over a range of ``end - start - 1 ms``:

        * ``level="gpu"``: ``sum by (hostname, Hostname, gpu)`` of ``count_over_time`` and
          ``sum_over_time`` (mean = sum / count, pooled over the GPU's series), ``min by`` /
          ``max by`` of ``min/max_over_time``, ``count by`` of series, and ``max by`` of
          ``quantile_over_time`` (linear interpolation, as polars' ``quantile(q, "linear")``):
          exact when the GPU has one series in the window; with several (a label such as
          ``hpc_job`` changed; ``n_series`` > 1) the quantiles are the largest of the per-series
          ones. Aggregating by host and GPU also drops the exporter's other labels from the
          answer (3 labels per result instead of about 10).
        * ``level="node"``: ``sum by (hostname, Hostname)`` of ``sum_over_time`` and
          ``count_over_time`` (mean = pooled over the node's samples, as polars would), ``min by``
          / ``max by`` of ``min/max_over_time``, and per quantile q ``quantile by (...) (q,
          avg_over_time(...))``: the spread of the per-GPU means over the node's GPUs (columns
          ``gpu_mean_pNN``; pooled sample quantiles of a node cannot be computed in PromQL).

        Returns:
            ``level="gpu"``: hostname (String), gpu (Int32), field_id (Int32), field (String),
            n_series (UInt32), n (UInt32, samples), mean, min, max, p05, p25... (Float64, the
            field's unit). ``level="node"``: hostname, field_id, field, n, mean, min, max,
            gpu_mean_p05... Sorted by hostname, gpu, field_id. Empty frame with these columns
            when nothing matches.

        Raises:
            ValueError: unknown ``level``, empty window.
            PrometheusQueryError, PrometheusUnavailableError: see :meth:`request`.
        """
        if level not in ("gpu", "node"):
            raise ValueError(f"level must be 'gpu' or 'node', not {level!r}")
        s_ms, e_ms = epoch_ms(start), epoch_ms(end)
        if e_ms - s_ms < 2:
            raise ValueError(f"empty window [{start!r}, {end!r})")
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms) if _hosts is False else _hosts
        qcols = [f"p{round(q * 100):02d}" for q in quantiles]
        at, w = e_ms - 1, e_ms - s_ms - 1
        frames = []
        for fld in fields:
            names = (
                _names[fld]
                if _names is not None
                else self.metric_names(fld, s_ms / 1000, e_ms / 1000)
            )
            for name in names:
                sels = self._selectors(name, hosts, gpu_only=True)

                def over(fn: str, arg: str = "", sels: list[str] = sels) -> str:
                    return " or ".join(f"{fn}({arg}{s}[{w}ms])" for s in sels)

                if level == "gpu":
                    # aggregated by host and GPU only: pools a GPU's series and sends 3 labels
                    # per result instead of the exporter's dozen
                    by = "by (" + ", ".join([*HOST_LABELS, "gpu"]) + ")"
                    stats = {
                        "n": f"sum {by} ({over('count_over_time')})",
                        "n_series": f"count {by} ({over('count_over_time')})",
                        "sum": f"sum {by} ({over('sum_over_time')})",
                        "min": f"min {by} ({over('min_over_time')})",
                        "max": f"max {by} ({over('max_over_time')})",
                    }
                    for q, c in zip(quantiles, qcols, strict=True):
                        stats[c] = f"max {by} ({over('quantile_over_time', f'{q!r}, ')})"
                else:
                    by = "by (" + ", ".join(HOST_LABELS) + ")"
                    stats = {
                        "n": f"sum {by} ({over('count_over_time')})",
                        "sum": f"sum {by} ({over('sum_over_time')})",
                        "min": f"min {by} ({over('min_over_time')})",
                        "max": f"max {by} ({over('max_over_time')})",
                    }
                    for q, c in zip(quantiles, qcols, strict=True):
                        stats["gpu_mean_" + c] = f"quantile {by} ({q!r}, {over('avg_over_time')})"
                expr = " or ".join(
                    f'label_replace({e}, "{STAT_LABEL}", "{k}", "", "")' for k, e in stats.items()
                )
                f = self._window_frame(expr, name, at)
                if f.height:
                    frames.append(f)
        return self._shape_stats(frames, level, qcols, hosts)

    @staticmethod
    def _shape_stats(
        frames: list[pl.DataFrame], level: str, qcols: list[str], hosts: list[str] | None
    ) -> pl.DataFrame:
        if level == "gpu":
            schema = {
                "hostname": pl.String,
                "gpu": pl.Int32,
                "field_id": pl.Int32,
                "field": pl.String,
                "n_series": pl.UInt32,
                "n": pl.UInt32,
                "mean": pl.Float64,
                "min": pl.Float64,
                "max": pl.Float64,
                **{c: pl.Float64 for c in qcols},
            }
        else:
            schema = {
                "hostname": pl.String,
                "field_id": pl.Int32,
                "field": pl.String,
                "n": pl.UInt32,
                "mean": pl.Float64,
                "min": pl.Float64,
                "max": pl.Float64,
                **{f"gpu_mean_{c}": pl.Float64 for c in qcols},
            }
        if not frames:
            return pl.DataFrame(schema=schema)
        f = pl.concat(frames, how="vertical")
        if hosts is not None:
            f = f.filter(pl.col("hostname").is_in(hosts))
        index = (
            ["hostname", "gpu", "field_id", "field"]
            if level == "gpu"
            else ["hostname", "field_id", "field"]
        )
        out = f.pivot(on="_stat", index=index, values="value").with_columns(
            (pl.col("sum") / pl.col("n")).alias("mean")
        )
        for c in schema:
            if c not in out.columns:
                out = out.with_columns(pl.lit(None, pl.Float64).alias(c))
        sort = ["hostname", "gpu", "field_id"] if level == "gpu" else ["hostname", "field_id"]
        return out.select([pl.col(c).cast(t) for c, t in schema.items()]).sort(
            sort, nulls_last=True
        )

    def phase_stats(
        self,
        phases: pl.DataFrame,
        *,
        level: str = "gpu",
        fields: Mapping[str, tuple[int, str]] | None = None,
        quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
    ) -> pl.DataFrame:
        """:func:`trainperf.telemetry.phase_stats` computed by Prometheus, one window per phase.

        Each phase ``[start, end)`` is a :meth:`window_stats` window (same samples as
        :func:`trainperf.telemetry.with_phases` for non-overlapping phases).

        Args:
            phases: :func:`trainperf.telemetry.phases_from_log` (or shifted).
            level: ``"gpu"`` (same columns as ``telemetry.phase_stats(level="gpu")``) or
                ``"node"``.
            fields: metric -> (field id, unit); default
                :data:`trainperf.telemetry.ACTIVITY_FIELDS`.
            quantiles, hostnames, job_id: see :meth:`window_stats`.

        Returns:
            ``level="gpu"``: phase, kind, index, hostname, gpu, metric, unit, n (UInt32), mean,
            p05... (Float64), the text columns Categorical as in ``telemetry.phase_stats``
            (:data:`trainperf.telemetry.GPU_STATS_CATEGORICAL`), so the two join;
            ``level="node"``: phase, kind, index, hostname, metric, unit (String), n,
            mean, min, max, gpu_mean_p05... Sorted like ``telemetry.phase_stats``.
        """

        fields = dict(fields or telemetry.ACTIVITY_FIELDS)
        if phases.height == 0:
            raise ValueError("no phases")
        s_all, e_all = epoch_ms(phases["start"].min()), epoch_ms(phases["end"].max())
        hosts = self._hosts(hostnames, job_id, s_all, e_all)
        ids = [fid for fid, _ in fields.values()]
        names = {fid: self.metric_names(fid, s_all / 1000, e_all / 1000) for fid in ids}
        mt = pl.DataFrame(
            {
                "metric": list(fields),
                "field_id": ids,
                "unit": [u for _, u in fields.values()],
            },
            schema={"metric": pl.String, "field_id": pl.Int32, "unit": pl.String},
        )
        qcols = [f"p{round(q * 100):02d}" for q in quantiles]
        parts = []
        for ph, kind, idx, s, e in phases.select("phase", "kind", "index", "start", "end").rows():
            if epoch_ms(e) - epoch_ms(s) < 2:
                continue
            ws = self.window_stats(
                s,
                e,
                fields=ids,
                level=level,
                quantiles=quantiles,
                _names=names,
                _hosts=hosts,
            )
            parts.append(
                ws.with_columns(
                    pl.lit(ph, pl.String).alias("phase"),
                    pl.lit(kind, pl.String).alias("kind"),
                    pl.lit(idx, pl.Int32).alias("index"),
                )
            )
        out = pl.concat(parts) if parts else None
        if level == "gpu":
            cols = ["phase", "kind", "index", "hostname", "gpu", "metric", "unit", "n", "mean"]
            cols += qcols
            sort = ["_k", "index", "hostname", "gpu", "_m"]
        else:
            cols = ["phase", "kind", "index", "hostname", "metric", "unit", "n", "mean"]
            cols += ["min", "max", *[f"gpu_mean_{c}" for c in qcols]]
            sort = ["_k", "index", "hostname", "_m"]
        if out is None or out.height == 0:
            types = {"phase": pl.String, "kind": pl.String, "index": pl.Int32}
            types |= {"hostname": pl.String, "gpu": pl.Int32, "metric": pl.String}
            types |= {"unit": pl.String, "n": pl.UInt32}
            return self._gpu_categorical(
                pl.DataFrame(schema={c: types.get(c, pl.Float64) for c in cols}), level
            )
        order = {m: i for i, m in enumerate(fields)}
        kind_order = {"init": 0, "train": 1, "eval": 2}
        out = out.join(mt, on="field_id", how="inner").with_columns(
            pl.col("metric").replace_strict(order, return_dtype=pl.Int32).alias("_m"),
            pl.col("kind").replace_strict(kind_order, default=9, return_dtype=pl.Int32).alias("_k"),
        )
        return self._gpu_categorical(out.sort(sort).select(cols), level)

    @staticmethod
    def _gpu_categorical(df: pl.DataFrame, level: str) -> pl.DataFrame:
        """``level="gpu"``: the text columns as ``telemetry.phase_stats`` types them."""
        if level != "gpu":
            return df

        return df.with_columns(pl.col(c).cast(pl.Categorical) for c in GPU_STATS_CATEGORICAL)

    def job_means(
        self,
        start: Any,
        end: Any,
        *,
        hostnames: Iterable[str] | str | None = None,
        job_id: str | None = None,
        fields: Iterable[int | str] = (1004, 1002, 1005, 203, 155, 100),
    ) -> pl.DataFrame:
        """Pooled mean of each DCGM field over a job's nodes in [start, end), computed by Prometheus.

        Per metric name one instant query: ``sum(sum_over_time(sel[w]))``, ``sum(count_over_time
        (sel[w]))``, ``count(count by (hostname, Hostname) (...))`` and ``count(...)`` of series,
        where ``sel`` matches the node list on ``hostname`` or ``Hostname`` (regex, anchored).

        Args:
            start, end: window, half-open.
            hostnames: node list (or a Slurm host list string, e.g. ``sacct`` NodeList).
            job_id: or the job whose hosts to use (:meth:`job_hostnames`).
            fields: DCGM field ids or names.

        Returns:
            field_id (Int32), field (String), n_nodes (UInt32), n_series (UInt32), n (UInt32,
            samples), mean (Float64, the field's unit: every sample of every GPU pooled); one row
            per field found, in ``fields`` order.

        Raises:
            ValueError: neither ``hostnames`` nor ``job_id``.
        """
        if hostnames is None and job_id in (None, ""):
            raise ValueError("job_means needs hostnames or job_id")
        s_ms, e_ms = epoch_ms(start), epoch_ms(end)
        hosts = self._hosts(hostnames, job_id, s_ms, e_ms) or []
        at, w = e_ms - 1, e_ms - s_ms - 1
        schema = {
            "field_id": pl.Int32,
            "field": pl.String,
            "n_nodes": pl.UInt32,
            "n_series": pl.UInt32,
            "n": pl.UInt32,
            "mean": pl.Float64,
        }
        rows = []
        if not hosts:
            return pl.DataFrame(schema=schema)
        by = "by (" + ", ".join(HOST_LABELS) + ")"
        for fld in fields:
            for name in self.metric_names(fld, s_ms / 1000, e_ms / 1000):
                sels = self._selectors(name, hosts, gpu_only=True)

                def over(fn: str, sels: list[str] = sels) -> str:
                    return " or ".join(f"{fn}({s}[{w}ms])" for s in sels)

                stats = {
                    "sum": f"sum({over('sum_over_time')})",
                    "n": f"sum({over('count_over_time')})",
                    "n_series": f"count({over('count_over_time')})",
                    "n_nodes": f"count(count {by} ({over('count_over_time')}))",
                }
                f = self._window_frame(self._stat_query_plain(stats), name, at)
                v = dict(zip(f["_stat"].to_list(), f["value"].to_list(), strict=True))
                if not v.get("n"):
                    continue
                fid = dcgm.field_id(name)
                rows.append(
                    {
                        "field_id": fid,
                        "field": dcgm.FIELDS[fid].name if fid in dcgm.FIELDS else name,
                        "n_nodes": round(v.get("n_nodes", 0)),
                        "n_series": round(v.get("n_series", 0)),
                        "n": round(v["n"]),
                        "mean": v["sum"] / v["n"],
                    }
                )
        return pl.DataFrame(rows, schema=schema, orient="row")

    @staticmethod
    def _stat_query_plain(stats: Mapping[str, str]) -> str:
        return " or ".join(
            f'label_replace({e}, "{STAT_LABEL}", "{k}", "", "")' for k, e in stats.items()
        )
