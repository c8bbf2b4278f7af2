"""Training speed from the logs: step times, training blocks, evaluation curves, throughput and MFU."""

from __future__ import annotations

import json
import math
from functools import cache

import polars as pl

from trainperf import flops as fl
from trainperf.flops.catalog import benchmark_model
from trainperf.mlperf.checks import as_count
from trainperf.mlperf.loader import Results
from trainperf.mlperf.precision import precision_of_runs
from trainperf.mlperf.rules import progress_key

__all__ = [
    "EVAL_CURVE_SCHEMA",
    "STEP_TIMES_SCHEMA",
    "THROUGHPUT_SCHEMA",
    "blocks",
    "eval_curve",
    "runs_with_throughput",
    "step_times",
    "throughput",
]


STEP_TIMES_SCHEMA: dict[str, pl.DataType] = {
    "file": pl.String,
    "step": pl.Int64,
    "time_ms": pl.Float64,
    "step_time_s": pl.Float64,
}
"""Columns of :func:`step_times`."""


def step_times(events: pl.DataFrame) -> pl.DataFrame:
    """Per-step training time from ``tracked_stats`` events, duplicates (one per rank) removed.

    NeMo-based MLPerf implementations log ``tracked_stats`` with value ``{"train_step_timing": s}``
    (v3.x), ``{"train_step_timing in s": s}`` (v4.1) or ``{"train_step_time": s}`` (NVIDIA v5.1)
    and metadata ``step`` (for gpt3, a token count).
    v4.0 logs carry no step timing; use block_start/block_stop there. A step timing that is not a
    positive finite number is left out; a ``step`` that is not an integer count is null.

    Args:
        events: an events frame (:func:`parse_log` or ``Results.events``).

    Returns:
        :data:`STEP_TIMES_SCHEMA`.
        polars frame: file (String), step (Int64, the metadata ``step``), time_ms (Float64),
        step_time_s (Float64, seconds). Empty when the log has no step timing.
    """
    # a value without the text "train_step_timing" holds neither key (the value column is the
    # json.dumps of the decoded value, in which a key's ASCII letters stand as they are): most
    # tracked_stats (throughput, init timings) are left out before any Python decode (issue 36)
    ts = events.filter(
        (pl.col("key") == "tracked_stats")
        & pl.col("value").str.contains("train_step_timing", literal=True)
    ).unique(subset=["file", "value", "metadata"], keep="first", maintain_order=True)
    rows = []
    for f, v, m, t in ts.select("file", "value", "metadata", "time_ms").iter_rows():
        val = json.loads(v)
        if not isinstance(val, dict):
            continue
        s = val.get(
            "train_step_timing in s", val.get("train_step_timing", val.get("train_step_time"))
        )
        if isinstance(s, bool) or not isinstance(s, int | float):
            continue  # not a step time (the reader keeps the event; a time must be a number)
        try:
            s = float(s)  # an integer of 400 digits does not fit a float: not a step time either
        except OverflowError:
            continue
        if not math.isfinite(s) or s <= 0:
            continue
        meta = json.loads(m)
        rows.append(
            {"file": f, "step": as_count(meta.get("step")), "time_ms": t, "step_time_s": float(s)}
        )
    return pl.DataFrame(
        rows,
        schema=STEP_TIMES_SCHEMA,
    )


EVAL_CURVE_SCHEMA: dict[str, pl.DataType] = {
    "result_file": pl.String,
    "round": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "progress": pl.Int64,
    "progress_unit": pl.String,
    "eval_value": pl.Float64,
    "eval_target": pl.Float64,
    "time_ms": pl.Float64,
}
"""Columns of :func:`eval_curve`."""


def eval_curve(results: Results) -> pl.DataFrame:
    """Evaluation metric against training progress for every run (rank duplicates removed).

    Args:
        results: what :func:`load_results` returned.

    Returns:
        polars frame: result_file, round, system, benchmark (String), n_accelerators (Int64),
        progress (Int64, the count of the metadata key the round's rules name for eval_accuracy,
        :func:`~trainperf.mlperf.rules.progress_key`: tokens for gpt3 from ``epoch_num``, samples
        from ``samples_count`` for llama2_70b_lora and llama31_*; null when missing or not a count),
        progress_unit (String: "tokens", "samples" or "epochs"), eval_value (Float64), eval_target
        (Float64, the ruleset target), time_ms (Float64, null when excluded as damaged). Sorted by
        result_file and progress (the evaluations' own order, not their timestamps).
        :data:`EVAL_CURVE_SCHEMA`.
    """
    ev = results.events.filter(pl.col("key") == "eval_accuracy").unique(
        subset=["file", "value", "metadata"], keep="first", maintain_order=True
    )
    meta = results.runs.select(
        pl.col("result_file").alias("file"),
        "round",
        "system",
        "benchmark",
        "n_accelerators",
        "eval_target",
    )
    rows = []
    for f, m, v, t in ev.select("file", "metadata", "value_num", "time_ms").iter_rows():
        rows.append({"file": f, "md": m, "eval_value": v, "time_ms": t})
    schema = {"file": pl.String, "md": pl.String, "eval_value": pl.Float64, "time_ms": pl.Float64}
    df = pl.DataFrame(rows, schema=schema).join(meta, on="file", how="left")
    out = []
    for rec in df.iter_rows(named=True):
        key, unit = progress_key(rec["benchmark"], rec["round"]) or ("epoch_num", "epochs")
        md = json.loads(rec["md"])
        rec["progress"] = as_count(md.get(key))
        rec["progress_unit"] = unit
        rec["result_file"] = rec["file"]
        out.append({c: rec[c] for c in EVAL_CURVE_SCHEMA})
    return pl.DataFrame(out, schema=EVAL_CURVE_SCHEMA).sort(
        "result_file", "progress", "time_ms", nulls_last=True, maintain_order=True
    )


def blocks(events: pl.DataFrame) -> pl.DataFrame:
    """Training blocks (``block_start``/``block_stop`` pairs, rank duplicates removed).

    A block is the training between two evaluations; its metadata ``first_epoch_num`` and
    ``epoch_count`` count tokens for gpt3 and samples for llama2_70b_lora.

    Returns:
        polars frame: file (String), first_epoch_num, epoch_count (Int64), start_ms, stop_ms
        (Float64, epoch ms; the earliest start and the latest stop over ranks, times excluded as
        damaged ignored), duration_s (Float64). Counts that are not integers are null.
    """
    be = events.filter(pl.col("key").is_in(["block_start", "block_stop"])).with_columns(
        pl.col("metadata")
        .str.json_path_match("$.first_epoch_num")
        .cast(pl.Int64, strict=False)
        .alias("first_epoch_num"),
        pl.col("metadata")
        .str.json_path_match("$.epoch_count")
        .cast(pl.Int64, strict=False)
        .alias("epoch_count"),
    )
    starts = (
        be.filter(pl.col("key") == "block_start")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("epoch_count").first(), pl.col("time_ms").min().alias("start_ms"))
    )
    stops = (
        be.filter(pl.col("key") == "block_stop")
        .group_by("file", "first_epoch_num")
        .agg(pl.col("time_ms").max().alias("stop_ms"))
    )
    return (
        starts.join(stops, on=["file", "first_epoch_num"], how="inner")
        .with_columns(((pl.col("stop_ms") - pl.col("start_ms")) / 1000.0).alias("duration_s"))
        .sort("file", "first_epoch_num")
    )


THROUGHPUT_SCHEMA = {
    "result_file": pl.String,
    "round": pl.String,
    "system": pl.String,
    "benchmark": pl.String,
    "n_accelerators": pl.Int64,
    "global_batch_size": pl.Int64,
    "accelerator_model": pl.String,
    "step_source": pl.String,
    "step_time_s": pl.Float64,
    "tokens_per_s_per_gpu_step": pl.Float64,
    "tokens_per_s_per_gpu_e2e": pl.Float64,
    "flops_per_token": pl.Float64,
    "model_tflops_per_gpu_step": pl.Float64,
    "mfu_bf16_dense_step": pl.Float64,
    "mfu_fp8_dense_step": pl.Float64,
    "model_tflops_per_gpu_e2e": pl.Float64,
    "mfu_bf16_dense_e2e": pl.Float64,
    "mfu_fp8_dense_e2e": pl.Float64,
    "hfu_bf16_dense_step": pl.Float64,
    "hfu_fp8_dense_step": pl.Float64,
    "sample_unit": pl.String,
    "samples_per_s_per_gpu_step": pl.Float64,
    "samples_per_s_per_gpu_e2e": pl.Float64,
    "flops_per_sample": pl.Float64,
    "mfu_fp4_dense_step": pl.Float64,
    "mfu_fp4_dense_e2e": pl.Float64,
    "precision": pl.String,
    "precision_source": pl.String,
    "mfu_step": pl.Float64,
    "mfu_e2e": pl.Float64,
    "mfu_peak": pl.String,
    "note": pl.String,
}
"""Columns of :func:`throughput` (see its docstring for units)."""

_PRECISIONS = ("bf16", "fp8", "fp4")

#: Benchmarks whose training blocks count samples and give the step-level rate when no step is
#: timed: those of v5.1 and later (NVIDIA's and AMD's logs of them time no step, or not every
#: one). Llama 2 70B LoRA and Llama 3.1 405B keep the end-to-end rate alone there, as before.
SAMPLE_BLOCK_BENCHMARKS = frozenset({"llama31_8b", "flux1", "deepseekv3_671b", "gpt_oss_20b"})


def throughput(
    results: Results,
    recompute: str | None = None,
    causal: bool = False,
    precision: str | None = None,
) -> pl.DataFrame:
    """Per-run throughput, model TFLOP/s per GPU and MFU from the logs themselves.

    Definitions (per run, n = n_accelerators; a *sample* is what the benchmark's logs count: a
    sequence for the language models, an image for Flux.1):

    * step level, training only (``step_source``): ``"tracked_stats"``, ``global_batch_size /
      (median step time x n)`` from the ``tracked_stats`` step timings (:func:`step_times`);
      ``"blocks"``, the samples of the training blocks over their summed duration (evaluations
      excluded): gpt3's ``epoch_count`` tokens (:func:`blocks`), or for the other benchmarks the
      ``samples_count`` the block advanced or, where start and stop carry the same count, its
      ``step`` difference x ``global_batch_size`` (NVIDIA's v5.1 logs), for the benchmarks of
      :data:`SAMPLE_BLOCK_BENCHMARKS`.
    * end to end: ``samples_to_converge / (time_to_train x n)``; it includes the evaluations
      inside the timed region, as MLPerf's time to train does.
    * tokens = samples x ``max_sequence_length`` (or the benchmark's own length); images have none.
    * ``model_tflops_per_gpu_* = samples/s/GPU x FLOP per sample / 1e12`` with the model of
      :func:`trainperf.flops.catalog.benchmark_model` (GPT-3 175B, Llama 3.1 405B and 8B, Llama
      2 70B LoRA, DeepSeek-V3 671B and GPT-OSS-20B with their active experts, Flux.1 per image at
      256 x 256; no recomputation; ``causal=True`` halves the full-attention score FLOPs).
    * MFU against every dense peak the accelerator has (:func:`trainperf.flops.peak_flops`):
      ``mfu_bf16_dense_*``, ``mfu_fp8_dense_*``, ``mfu_fp4_dense_*`` (null where the part has no
      such peak), and ``mfu_step``/``mfu_e2e`` against the peak of the run's own ``precision``:
      the one its log states (:func:`trainperf.mlperf.precision.precision_from_log`,
      ``precision_source`` names the line), else the ``precision`` argument (the config's);
      where both are known and differ, the log wins and ``note`` says so. Unknown precision: no
      ``mfu_step``; ``note`` says which peak each column assumes, and when the model FLOP/s
      exceed the BF16 peak, that the run cannot have computed in BF16.
    * HFU (hardware FLOPs, full recomputation counted) only when ``recompute`` is given; the logs do
      not say whether activations were recomputed.

    Args:
        results: :func:`load_results` output.
        recompute: ``"none"``, ``"selective"`` or ``"full"`` when known (for HFU); None: unknown.
        causal: the causal-attention FLOP convention.
        precision: the datatype the config says the runs trained in (``bf16``, ``fp8``, ``fp4``);
            None: unknown. Fills runs whose logs say nothing.

    Returns:
        :data:`THROUGHPUT_SCHEMA`, one row per successful run: result_file, round, system, benchmark (String),
        n_accelerators, global_batch_size (Int64), accelerator_model (String), step_source (String:
        "tracked_stats", "blocks" or null), step_time_s (Float64, s), tokens_per_s_per_gpu_step,
        tokens_per_s_per_gpu_e2e (Float64, tokens/s/GPU; null for images), flops_per_token (Float64,
        FLOP), model_tflops_per_gpu_step, model_tflops_per_gpu_e2e (Float64, TFLOP/s),
        mfu_{bf16,fp8,fp4}_dense_{step,e2e} (Float64, fraction 0-1), hfu_bf16_dense_step,
        hfu_fp8_dense_step (Float64 or null), sample_unit (String: "sequence" or "image"),
        samples_per_s_per_gpu_step/e2e (Float64, samples/s/GPU), flops_per_sample (Float64, FLOP),
        precision (String or null), precision_source (String: "<file>:<line>: <setting>",
        "config" or null), mfu_step, mfu_e2e (Float64, against the run's precision; null when
        unknown), mfu_peak (String: the peak those two assume, e.g. "FP8 dense 5000 TFLOP/s"),
        note (String).

    Raises:
        ValueError: ``precision`` not one of ``bf16``, ``fp8``, ``fp4``.
    """
    if precision is not None and precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(_PRECISIONS)}, got {precision!r}")
    st = step_times(results.events).group_by("file").agg(pl.col("step_time_s").median())
    all_blocks = blocks(results.events)
    spanning = _blocks_spanning_evaluations(results.events, all_blocks)
    bl = (
        all_blocks.filter(~pl.col("file").is_in(list(spanning)))
        .group_by("file")
        .agg(
            pl.col("epoch_count").sum().alias("block_tokens"),
            pl.col("duration_s").sum().alias("block_s"),
        )
    )
    step_s = dict(zip(st["file"], st["step_time_s"], strict=True))
    block = {f: (t, d) for f, t, d in bl.select("file", "block_tokens", "block_s").iter_rows()}
    ok = results.runs.filter(pl.col("status") == "success")
    gbs = dict(zip(ok["result_file"], ok["global_batch_size"], strict=True))
    sample_blocks = _sample_blocks(results.events, gbs)
    own = {f: (p, src) for f, p, src in precision_of_runs(ok["result_file"].to_list()).iter_rows()}
    rows = []
    for r in ok.iter_rows(named=True):
        f = r["result_file"]
        row = _throughput_row(
            r,
            step_s.get(f),
            block.get(f)
            if r["benchmark"] == "gpt3"
            else sample_blocks.get(f)
            if r["benchmark"] in SAMPLE_BLOCK_BENCHMARKS
            else None,
            recompute,
            causal,
            own.get(f, (None, None)),
            precision,
        )
        if f in spanning and row["step_source"] is None:
            row["note"] = "; ".join(n for n in (spanning[f], row["note"]) if n)
        rows.append(row)
    return pl.DataFrame(rows, schema=THROUGHPUT_SCHEMA)


def _sample_blocks(events: pl.DataFrame, gbs: dict) -> dict[str, tuple[float, float]]:
    """{file: (samples, seconds)} of the training blocks of a log that counts samples.

    Each ``block_start`` is paired with the next ``block_stop`` (rank duplicates removed). A
    block's samples: the ``samples_count`` it advanced, or where start and stop carry the same
    count (NVIDIA's v5.1 logs state the count at the block's end on both), its ``step``
    difference x the run's global batch size. A file with a block neither gives is left out.
    """
    be = (
        events.filter(pl.col("key").is_in(["block_start", "block_stop"]))
        .unique(subset=["file", "key", "metadata"], keep="first", maintain_order=True)
        .sort("file", "time_ms", maintain_order=True)
    )
    out: dict[str, tuple[float, float]] = {}
    bad: set[str] = set()
    open_: dict[str, tuple[float, dict]] = {}
    for f, key, meta, t in be.select("file", "key", "metadata", "time_ms").iter_rows():
        try:
            md = json.loads(meta) if meta else {}
        except ValueError:
            md = {}
        if key == "block_start":
            open_[f] = (t, md if isinstance(md, dict) else {})
            continue
        start = open_.pop(f, None)
        if start is None or t is None or start[0] is None or not isinstance(md, dict):
            continue
        t0, m0 = start
        n0, n1 = as_count(m0.get("samples_count")), as_count(md.get("samples_count"))
        s0, s1 = as_count(m0.get("step")), as_count(md.get("step"))
        if n0 is not None and n1 is not None and n1 > n0:
            samples = n1 - n0
        elif s0 is not None and s1 is not None and s1 > s0 and gbs.get(f):
            samples = (s1 - s0) * gbs[f]
        else:
            bad.add(f)
            continue
        dur = (t - t0) / 1000.0
        if dur <= 0:
            bad.add(f)
            continue
        prev = out.get(f, (0.0, 0.0))
        out[f] = (prev[0] + samples, prev[1] + dur)
    return {f: v for f, v in out.items() if f not in bad}


def _blocks_spanning_evaluations(events: pl.DataFrame, bl: pl.DataFrame) -> dict[str, str]:
    """Files whose training blocks hold evaluations: {file: why no step-level throughput}.

    A block's ``epoch_count`` is the tokens trained between two evaluations (NVIDIA's logs: the
    evaluation at ``first_epoch_num + epoch_count`` follows ``block_stop``). Some submissions log
    one block over the whole run with ``epoch_count`` one evaluation interval (Intel-HabanaLabs'
    v3.1 GPT-3 logs: ``block_start`` at 0 with ``epoch_count`` 50,331,648, ``block_stop`` at
    ``run_stop``, its 24 evaluations inside); tokens over such a block's duration would count one
    interval's tokens over the whole run (a throughput 24 times too low), so such a file gets no
    block-based step throughput. Detected by progress, not by time alone (rank clocks differ by
    milliseconds): an evaluation logged before a block's stop whose ``epoch_num`` lies beyond
    the block's end ``first_epoch_num + epoch_count``.
    """
    if bl.is_empty():
        return {}
    ev = (
        events.filter(pl.col("key") == "eval_accuracy")
        .select(
            "file",
            pl.col("time_ms").alias("eval_ms"),
            pl.col("metadata")
            .str.json_path_match("$.epoch_num")
            .cast(pl.Int64, strict=False)
            .alias("eval_progress"),
        )
        .drop_nulls()
    )
    inside = (
        bl.drop_nulls(["first_epoch_num", "epoch_count", "stop_ms"])
        .join(ev, on="file", how="inner")
        .filter(
            (pl.col("eval_ms") < pl.col("stop_ms"))
            & (pl.col("eval_ms") > pl.col("start_ms"))
            & (pl.col("eval_progress") > pl.col("first_epoch_num") + pl.col("epoch_count"))
        )
        .group_by("file", "first_epoch_num", "epoch_count")
        .agg(pl.col("eval_progress").n_unique().alias("n_evals"))
        .sort("file", "first_epoch_num")
    )
    out: dict[str, str] = {}
    for f, first, count, n in inside.iter_rows():
        out.setdefault(
            f,
            f"the training block from token {first:,} (epoch_count {count:,}) holds {n} "
            "evaluations beyond its end: no step-level throughput from blocks (end to end only)",
        )
    return out


def _peak_label(precision: str, tflops: float) -> str:
    return f"{precision.upper()} dense {tflops:g} TFLOP/s"


@cache
def _accelerators() -> pl.DataFrame:
    """The bundled accelerator table, read once per process (issue 36: read per run it was 2 % of
    a round's record build)."""
    return fl.load_accelerators()


@cache
def _peaks(accelerator: str) -> dict[str, float | str]:
    """precision -> dense peak (FLOP/s) of ``accelerator`` in the bundled table, or the
    ValueError's message where it has none (:func:`trainperf.flops.peak_flops`). Cached: the
    table is fixed per process and a round's runs name a few accelerators (issue 36: the lookup,
    done per run and precision, was a quarter of a round's record build)."""
    out: dict[str, float | str] = {}
    for p in _PRECISIONS:
        try:
            out[p] = fl.peak_flops(accelerator, p, _accelerators())
        except ValueError as exc:
            out[p] = str(exc)
    return out


def _throughput_row(r: dict, step_s, block, recompute, causal, own, config_precision) -> dict:
    """One run's :func:`throughput` row (``step_s``: median step time; ``block``: (tokens or
    samples, s); ``own``: (precision, evidence) from the log; ``config_precision``)."""
    n = r["n_accelerators"]
    keep = ("result_file", "round", "system", "benchmark", "n_accelerators", "global_batch_size")
    out = {k: r[k] for k in (*keep, "accelerator_model")}
    notes = []
    model = benchmark_model(r["benchmark"], causal=causal, seq_len=r["max_sequence_length"])
    image = model is not None and model.sample_unit == "image"
    seq = None if image else (r["max_sequence_length"] or (model.seq_len if model else None))
    f_tok = model.flops_per_token if model else None
    f_sample = model.flops_per_sample if model else None
    out["sample_unit"] = model.sample_unit if model else None
    out["step_source"] = None
    out["step_time_s"] = None
    step_sps = None  # samples/s/GPU, training only
    gbs = r["global_batch_size"]
    if n and gbs and step_s:
        out["step_source"], out["step_time_s"] = "tracked_stats", step_s
        step_sps = gbs / (step_s * n)
    elif n and block and block[0] and block[1] and block[1] > 0:
        out["step_source"] = "blocks"
        if r["benchmark"] == "gpt3":  # gpt3 blocks count tokens
            step_sps = block[0] / (block[1] * n) / seq if seq else None
        else:
            step_sps = block[0] / (block[1] * n)
    e2e_sps = None
    samples = r.get("samples_to_converge")
    if not samples and r["tokens_to_converge"] and seq:
        samples = r["tokens_to_converge"] / seq
    if n and samples and r["time_to_train_min"]:
        e2e_sps = samples / (r["time_to_train_min"] * 60.0 * n)
    if r["benchmark"] == "gpt3" and r["tokens_to_converge"] and n and r["time_to_train_min"]:
        e2e_sps = (
            r["tokens_to_converge"] / seq / (r["time_to_train_min"] * 60.0 * n) if seq else None
        )
    out["samples_per_s_per_gpu_step"] = step_sps
    out["samples_per_s_per_gpu_e2e"] = e2e_sps
    out["tokens_per_s_per_gpu_step"] = step_sps * seq if (step_sps is not None and seq) else None
    out["tokens_per_s_per_gpu_e2e"] = e2e_sps * seq if (e2e_sps is not None and seq) else None
    out["flops_per_token"] = f_tok
    out["flops_per_sample"] = f_sample
    peaks: dict[str, float] = {}
    if model is None:
        notes.append(f"no model for {r['benchmark']!r}: FLOP figures not computed")
    elif r["accelerator_model"]:
        got = _peaks(r["accelerator_model"])
        if isinstance(got.get("bf16"), str):
            notes.append(got["bf16"])
        peaks = {p: v for p, v in got.items() if not isinstance(v, str)}
    else:
        notes.append("the logs name no accelerator (no systems JSON): no MFU")
    for kind, sps in (("step", step_sps), ("e2e", e2e_sps)):
        tfl = sps * f_sample / 1e12 if (sps is not None and f_sample) else None
        out[f"model_tflops_per_gpu_{kind}"] = tfl
        for p in _PRECISIONS:
            out[f"mfu_{p}_dense_{kind}"] = (
                tfl * 1e12 / peaks[p] if (tfl is not None and p in peaks) else None
            )
    prec, source = own
    if prec and config_precision and prec != config_precision:
        notes.append(
            f"the config says {config_precision} but the log says {prec} ({source}): the log's is used"
        )
    if not prec and config_precision:
        prec, source = config_precision, "config"
    out["precision"], out["precision_source"] = prec, source
    out["mfu_peak"] = None
    out["mfu_step"] = out["mfu_e2e"] = None
    if prec and prec in peaks:
        out["mfu_step"] = out[f"mfu_{prec}_dense_step"]
        out["mfu_e2e"] = out[f"mfu_{prec}_dense_e2e"]
        out["mfu_peak"] = _peak_label(prec, peaks[prec] / 1e12)
    elif prec and peaks:
        notes.append(f"{r['accelerator_model']} has no dense {prec} peak in the table: no MFU")
    elif peaks and (
        out["model_tflops_per_gpu_step"] is not None or out["model_tflops_per_gpu_e2e"] is not None
    ):
        assumed = ", ".join(
            f"mfu_{p}_dense_* against {_peak_label(p, peaks[p] / 1e12)}"
            for p in _PRECISIONS
            if p in peaks
        )
        tfl = out["model_tflops_per_gpu_step"] or out["model_tflops_per_gpu_e2e"]
        above = ""
        if "bf16" in peaks and tfl * 1e12 > peaks["bf16"]:
            lower = "FP8 or FP4" if "fp4" in peaks else "FP8"
            above = (
                f"; {tfl:.0f} TFLOP/s per GPU is above the BF16 dense peak: the run computed in "
                f"{lower}, not BF16"
            )
        if assumed:
            notes.append(f"precision unknown (the log states none): {assumed}{above}")
    hfu_ratio = None
    if recompute and model and model.kind == "dense" and step_sps is not None and f_tok:
        spec = getattr(fl, {"gpt3": "GPT3_175B", "llama31_405b": "LLAMA31_405B",
                            "llama31_8b": "LLAMA31_8B"}[r["benchmark"]])  # fmt: skip
        hfu_ratio = fl.model_flops_per_token(spec, causal=causal, recompute=recompute) / (
            fl.model_flops_per_token(spec, causal=causal)
        )
    for p in ("bf16", "fp8"):
        m = out[f"mfu_{p}_dense_step"]
        out[f"hfu_{p}_dense_step"] = (
            m * hfu_ratio if (m is not None and hfu_ratio is not None) else None
        )
    if recompute is None:
        notes.append("HFU not computed: recomputation unknown")
    out["note"] = "; ".join(notes)
    return out


def runs_with_throughput(results: Results, **kwargs) -> pl.DataFrame:
    """The ``runs`` frame with the :func:`throughput` columns joined on ``result_file``.

    This is the per-run results table that batch runs collect (one Parquet file per results folder).

    Args:
        results: :func:`load_results` output.
        **kwargs: passed to :func:`throughput` (``recompute``, ``causal``).

    Returns:
        ``runs`` columns plus step_source, step_time_s, tokens_per_s_per_gpu_step/e2e, flops_per_token,
        model_tflops_per_gpu_step/e2e, mfu_{bf16,fp8}_dense_{step,e2e}, hfu_{bf16,fp8}_dense_step, note
        (null for runs that did not succeed).
    """
    thr = throughput(results, **kwargs).drop(
        "round", "system", "benchmark", "n_accelerators", "global_batch_size", "accelerator_model"
    )
    return results.runs.join(thr, on="result_file", how="left")
