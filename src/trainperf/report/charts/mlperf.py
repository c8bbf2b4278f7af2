"""Charts of the MLPerf runs chapter: time to train of every run, evaluation curves."""

from __future__ import annotations

import altair as alt
import polars as pl

from trainperf.report.charts.theme import RULE_COLOR, benchmark_name, log_x

__all__ = ["EVAL_METRICS", "eval_curve", "time_to_train_runs"]

#: What ``eval_accuracy`` measures per benchmark (MLPerf Training rules: GPT-3 log perplexity,
#: target 2.69; Llama 2 70B LoRA evaluation cross-entropy loss, target 0.925).
EVAL_METRICS = {"gpt3": "log perplexity", "llama2_70b_lora": "evaluation loss"}


def _system_label(df: pl.DataFrame) -> pl.DataFrame:
    out = df.with_columns(
        (
            pl.col("system")
            + " ("
            + pl.col("n_accelerators").map_elements(lambda n: f"{n:,}", return_dtype=pl.String)
            + " GPUs, "
            + pl.col("round")
            + ")"
        ).alias("system_label")
    )
    if "result_file" in out.columns:  # the tooltip names the file below its results folder, not
        # the absolute path of the machine the book was built on (it is written into the SVG)
        out = out.with_columns(pl.col("result_file").str.replace(r"^.*?/results/", ""))
    return out


def time_to_train_runs(
    runs: pl.DataFrame, scores: pl.DataFrame, benchmark: str | None = None
) -> alt.TopLevelMixin:
    """Time to train of every run per system (points) on a log axis, the MLPerf score marked (a tick).

    Args:
        runs: ``Results.runs`` (system, round, benchmark, n_accelerators, time_to_train_min, status,
            result_file).
        scores: ``Results.scores`` (the same keys and score_min, minutes).
        benchmark: restrict to one benchmark id; None shows all, one facet row per benchmark.

    Returns:
        A layered chart (one benchmark) or a faceted one; titles name the benchmark
        (:data:`trainperf.report.charts.theme.BENCHMARK_NAMES`), not its id.
    """
    r = _system_label(runs.filter(pl.col("time_to_train_min").is_not_null()))
    s = _system_label(scores.filter(pl.col("score_min").is_not_null()))
    if benchmark:
        r = r.filter(pl.col("benchmark") == benchmark)
        s = s.filter(pl.col("benchmark") == benchmark)
    r = r.with_columns(
        pl.col("benchmark").replace_strict(_names(r), default=None).alias("benchmark_label"),
        pl.col("status").alias("status_label"),
    )
    s = s.with_columns(
        pl.col("benchmark").replace_strict(_names(s), default=None).alias("benchmark_label")
    )
    y = alt.Y("system_label:N", title=None, sort=alt.SortField("n_accelerators"))
    pts = (
        alt.Chart(r)
        .mark_point(filled=True, size=70, opacity=0.75)
        .encode(
            # log axis over the runs shown (padded), not whole decades of empty space
            x=log_x(
                "time_to_train_min:Q",
                r["time_to_train_min"].to_list() + s["score_min"].to_list(),
                "time to train (minutes, log scale)",
            ),
            y=y,
            color=alt.Color("status_label:N", title="run status"),
            tooltip=[
                "system",
                "round",
                "benchmark",
                "result_file",
                alt.Tooltip("time_to_train_min:Q", format=".3f"),
                "status",
            ],
        )
    )
    ticks = (
        alt.Chart(s)
        .mark_tick(color="black", thickness=3, size=26)
        .encode(
            x="score_min:Q",
            y=y,
            tooltip=[
                "system",
                "round",
                "benchmark",
                alt.Tooltip("score_min:Q", format=".3f", title="score (min)"),
            ],
        )
    )
    chart = alt.layer(pts, ticks)
    title = "time to train per run; black tick: MLPerf score (olympic mean)"
    if benchmark is None:
        return (
            chart.facet(row=alt.Row("benchmark_label:N", title=None), data=None)
            .resolve_scale(y="independent")
            .properties(title=title[0].upper() + title[1:])
        )
    return chart.properties(
        title=f"{benchmark_name(benchmark)}: {title}", height=max(60, 40 * s.height)
    )


def _names(df: pl.DataFrame) -> dict[str, str]:
    return {b: benchmark_name(b) for b in df["benchmark"].drop_nulls().unique().to_list()}


def eval_curve(curve: pl.DataFrame, benchmark: str) -> alt.LayerChart:
    """Evaluation metric against training progress for every run of one benchmark, with the target line.

    Args:
        curve: :func:`trainperf.mlperf.eval_curve` frame (result_file, system, round,
            n_accelerators, benchmark, progress, progress_unit, eval_value, eval_target).
        benchmark: which benchmark id to show (its progress unit: tokens for gpt3, samples for LoRA).
    """
    c = _system_label(curve.filter(pl.col("benchmark") == benchmark))
    unit = c["progress_unit"][0] if c.height else "progress"
    metric = EVAL_METRICS.get(benchmark, "evaluation metric")
    lines = (
        alt.Chart(c)
        .mark_line(point=alt.OverlayMarkDef(size=30), strokeWidth=1.5)
        .encode(
            x=alt.X(
                "progress:Q",
                title=f"{unit} trained",
                # each label with its own SI prefix ("200M ... 1.2G"; a shared prefix gives "0G")
                axis=alt.Axis(
                    tickCount=8, labelExpr="datum.value == 0 ? '0' : format(datum.value, '~s')"
                ),
            ),
            y=alt.Y("eval_value:Q", title=metric, scale=alt.Scale(zero=False)),
            color=alt.Color("system_label:N", title="system"),
            detail="result_file:N",
            tooltip=[
                "system",
                "result_file",
                "progress",
                alt.Tooltip("eval_value:Q", format=".4f"),
            ],
        )
    )
    target = (
        c.select("eval_target")
        .drop_nulls()
        .unique()
        .with_columns(
            (pl.lit("convergence target ") + pl.col("eval_target").round(4).cast(pl.String)).alias(
                "target_label"
            )
        )
    )
    rule = (
        alt.Chart(target).mark_rule(color=RULE_COLOR, strokeDash=[6, 4]).encode(y="eval_target:Q")
    )
    text = (
        alt.Chart(target)
        # at the left end: the curves start high above their target and reach it on the right
        .mark_text(align="left", baseline="bottom", dx=4, dy=-3, color=RULE_COLOR, fontSize=11)
        .encode(y="eval_target:Q", x=alt.value(0), text="target_label:N")
    )
    return alt.layer(lines, rule, text).properties(
        title=f"{benchmark_name(benchmark)}: evaluation curve (dashed: convergence target)",
        width=560,
    )
