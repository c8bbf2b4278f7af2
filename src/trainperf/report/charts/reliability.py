"""Charts of the reliability section (operations chapter): failure rate by job size, MTTF against
the independence projection, expected ETTR against the checkpoint interval.

Every title says "SYNTHETIC data" when ``synthetic=True``. Text a reader sees is in ``*_label``
columns or titles, translated by :mod:`trainperf.report.charts.i18n`.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import PALETTE

__all__ = ["reliability_ettr_curve", "reliability_failure_rate_by_size", "reliability_mttf"]

_CLASS_LABELS = {
    "n_user_failure": "user failure",
    "n_infra_failure": "infrastructure failure",
    "n_timeout": "timeout",
}
_CLASS_COLORS = ["#E69F00", "#D55E00", "#56B4E9"]  # Okabe-Ito
_SIZE_COLORS = ["#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#000000"]


def _title(title: str, synthetic: bool) -> str:
    return f"{title} (SYNTHETIC data)" if synthetic else title


def reliability_failure_rate_by_size(
    rates: pl.DataFrame, *, synthetic: bool = False
) -> alt.LayerChart:
    """Share of jobs that failed, by job size in GPUs, stacked by failure class, with the job count.

    Args:
        rates: :func:`trainperf.reliability.failure_rate_by_size`.
        synthetic: say "SYNTHETIC data" in the title.
    """
    order = rates.get_column("size_bin").cast(pl.String).to_list()
    d = (
        rates.with_columns(pl.col("size_bin").cast(pl.String))
        .unpivot(
            index=["size_bin", "n_jobs"], on=list(_CLASS_LABELS), variable_name="c", value_name="n"
        )
        .with_columns(
            class_label=pl.col("c").replace_strict(_CLASS_LABELS),
            share=pl.col("n") / pl.col("n_jobs"),
        )
    )
    labels = list(_CLASS_LABELS.values())
    bars = (
        alt.Chart(d)
        .mark_bar()
        .encode(
            x=alt.X("size_bin:N", title="job size (GPUs)", sort=order),
            y=alt.Y("share:Q", title="share of jobs", stack="zero", axis=alt.Axis(format="%")),
            color=alt.Color(
                "class_label:N",
                title="how the job failed",
                sort=labels,
                scale=alt.Scale(domain=labels, range=_CLASS_COLORS),
            ),
            order=alt.Order("c:N"),
            tooltip=[
                alt.Tooltip("size_bin:N", title="GPUs"),
                alt.Tooltip("class_label:N", title="class"),
                alt.Tooltip("n:Q", title="jobs", format=","),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
    )
    top = rates.with_columns(
        pl.col("size_bin").cast(pl.String),
        count_label=pl.format("n = {}", pl.col("n_jobs")),
    )
    text = (
        alt.Chart(top)
        .mark_text(dy=-6, fontSize=11)
        .encode(
            x=alt.X("size_bin:N", sort=order),
            y=alt.Y("failure_rate:Q"),
            text="count_label:N",
        )
    )
    return alt.layer(bars, text).properties(
        width=460, height=260, title=_title("Failed jobs by job size", synthetic)
    )


def reliability_mttf(
    projection: pl.DataFrame, measured: pl.DataFrame, *, synthetic: bool = False
) -> alt.LayerChart:
    """MTTF of a job against its size: the independence projection (line) and the measured MTTF of
    each size bin with enough failures (points, exact 95 % interval as a rule); log-log axes.

    Args:
        projection: :func:`trainperf.reliability.projected_mttf` (n_nodes, n_gpus, mttf_h).
        measured: :func:`trainperf.reliability.mttf_by_size` (mean_nodes, measured_mttf_h and its
            interval, enough).
        synthetic: say "SYNTHETIC data" in the title.
    """
    proj = projection.with_columns(series_label=pl.lit("projected: MTTF per node / nodes"))
    m = measured.filter(pl.col("enough")).with_columns(
        series_label=pl.lit("in the accounting (95 % interval)"),
        size_label=pl.format("nodes: {}", pl.col("size_bin").cast(pl.String)),
    )
    series = ["projected: MTTF per node / nodes", "in the accounting (95 % interval)"]
    color = alt.Color(
        "series_label:N",
        title=None,
        sort=series,
        scale=alt.Scale(domain=series, range=[PALETTE[0], PALETTE[1]]),
    )
    xs = proj.get_column("n_nodes").to_list() + (
        m.get_column("mean_nodes").drop_nulls().to_list() if m.height else []
    )
    ticks = [v for v in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if min(xs) <= v <= max(xs)]
    # the largest projected size (the cluster's node count, job_sizes) gets its own tick
    largest = int(max(proj.get_column("n_nodes").to_list(), default=0))
    if largest and largest not in ticks and all(largest > 1.3 * v for v in ticks):
        ticks.append(largest)
    x = alt.X(
        "n_nodes:Q",
        title="job size (nodes, log scale)",
        scale=alt.Scale(type="log", domain=[min(xs) / 1.25, max(xs) * 1.25], nice=False),
        axis=alt.Axis(values=ticks, format="d"),
    )
    y_title = "MTTF of a job (hours, log scale)"
    line = (
        alt.Chart(proj)
        .mark_line()
        .encode(x=x, y=alt.Y("mttf_h:Q", title=y_title, scale=alt.Scale(type="log")), color=color)
    )
    layers = [line]
    if m.height:
        md = m.rename({"mean_nodes": "n_nodes"})
        rule = (
            alt.Chart(md)
            .mark_rule()
            .encode(x=x, y="measured_mttf_lo_h:Q", y2="measured_mttf_hi_h:Q", color=color)
        )
        pts = (
            alt.Chart(md)
            .mark_point(filled=True, size=60)
            .encode(
                x=x,
                y="measured_mttf_h:Q",
                color=color,
                tooltip=[
                    alt.Tooltip("size_label:N", title="size"),
                    alt.Tooltip("n_infra_failures:Q", title="failures"),
                    alt.Tooltip("measured_mttf_h:Q", title="MTTF (h)", format=",.0f"),
                ],
            )
        )
        layers += [rule, pts]
    return alt.layer(*layers).properties(
        width=460, height=280, title=_title("Mean time to failure by job size", synthetic)
    )


def reliability_ettr_curve(curve: pl.DataFrame, *, synthetic: bool = False) -> alt.LayerChart:
    """Expected ETTR against the checkpoint interval, one line per job size, the best interval
    (Young's) of each marked.

    Args:
        curve: :func:`trainperf.reliability.ettr_curve` (n_nodes, checkpoint_interval_h, ettr,
            optimal).
        synthetic: say "SYNTHETIC data" in the title.
    """
    d = curve.with_columns(size_label=pl.format("nodes: {}", pl.col("n_nodes")))
    sizes = d.get_column("size_label").unique(maintain_order=True).to_list()
    color = alt.Color(
        "size_label:N",
        title="job size",
        sort=sizes,
        scale=alt.Scale(domain=sizes, range=_SIZE_COLORS[: len(sizes)]),
    )
    iv = d.get_column("checkpoint_interval_h")
    x = alt.X(
        "checkpoint_interval_h:Q",
        title="checkpoint interval (hours, log scale)",
        scale=alt.Scale(type="log", domain=[float(iv.min()), float(iv.max())], nice=False),
        axis=alt.Axis(
            values=[v for v in (0.1, 0.25, 0.5, 1, 2, 4, 8, 24) if iv.min() <= v <= iv.max()]
        ),
    )
    lo = max(0.0, float(d.get_column("ettr").min() or 0.0))
    y = alt.Y(
        "ettr:Q",
        title="expected ETTR",
        scale=alt.Scale(domain=[0 if lo < 0.5 else 0.5, 1]),
        axis=alt.Axis(format="%"),
    )
    lines = alt.Chart(d).mark_line().encode(x=x, y=y, color=color)
    best = (
        alt.Chart(d.filter(pl.col("optimal")))
        .mark_point(filled=True, size=50)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=[
                alt.Tooltip("size_label:N", title="size"),
                alt.Tooltip("checkpoint_interval_h:Q", title="interval (h)", format=".2f"),
                alt.Tooltip("ettr:Q", title="ETTR", format=".1%"),
            ],
        )
    )
    return alt.layer(lines, best).properties(
        width=460,
        height=280,
        title=alt.TitleParams(
            _title("Expected ETTR against the checkpoint interval", synthetic),
            subtitle="dot: the best interval of each size (Young 1974)",
        ),
    )
