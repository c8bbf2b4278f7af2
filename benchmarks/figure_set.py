"""The report's 21 figures as Altair charts, built from the bundled data with the notebooks' calls.

Used by ``bench_figures.py`` (export timing) and for looking at every figure without running the
notebooks (``python benchmarks/figure_set.py OUTDIR`` exports them all in English and Japanese).
The calls mirror the chart cells of ``notebooks/*.ipynb``; the notebooks stay the source of truth.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import polars as pl

from trainperf import compare, dcgm, flops, mlperf, slurm, telemetry, trace
from trainperf import jobs as jobstats
from trainperf.config import DEMO_CONFIG, load_config
from trainperf.synthetic import telemetry as synthetic

ROOT = Path(__file__).resolve().parents[1]


def _mlperf(charts, figs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = mlperf.load_results(ROOT / "data/mlperf")
    for bench in results.runs["benchmark"].drop_nulls().unique().sort():
        figs[f"mlperf_time_to_train_{bench}"] = charts.time_to_train_runs(
            results.runs, results.scores, bench
        )
    curve = mlperf.eval_curve(results)
    for bench in curve["benchmark"].drop_nulls().unique().sort():
        figs[f"mlperf_eval_curve_{bench}"] = charts.eval_curve(curve, bench)


def _eos(charts, figs):
    published = compare.load_published_results(ROOT / "data/reference/published_results.csv")
    # the demo's names and quoted ratio, as the book gets them
    demo = load_config(ROOT / DEMO_CONFIG)
    evaluated, reference = demo.name, demo.reference.name
    figs["eos_gpt3_time_to_train_by_scale"] = charts.time_to_train_by_scale(
        published, [evaluated, reference]
    )
    table = compare.paper_comparison_table(published, evaluated=evaluated, reference=reference)
    figs["eos_efficiency_ratio_by_scale"] = charts.efficiency_ratio_by_scale(
        table, talk_ratio=demo.published.quoted_ratio
    )
    rows = published.filter(
        (pl.col("benchmark") == "gpt3")
        & pl.col("system").is_in([evaluated, reference])
        & pl.col("tflops_per_gpu").is_not_null()
    )
    mfu = flops.with_mfu_columns(rows, accelerator="H100 SXM")
    figs["eos_gpt3_mfu_by_scale"] = charts.mfu_by_scale(
        mfu, accelerator_label="H100 SXM", systems=[evaluated, reference]
    )
    figs["eos_llama2_70b_lora_time_to_train_by_scale"] = charts.time_to_train_by_scale(
        published, [evaluated, reference], benchmark="llama2_70b_lora"
    )


def _memory(charts, figs):
    spec, rec = flops.PRESETS["gpt3_175b"], flops.RECIPES["mixed_adam_fp32_grads"]
    acc = flops.load_accelerators().filter(
        pl.col("accelerator") == flops.resolve_accelerator("H100 SXM")
    )
    mem = acc["memory_gb"][0] * 1e9
    by_nodes = flops.memory_vs_nodes(
        spec,
        [1, 2, 4, 8, 16, 32, 64, 96],
        rec,
        gpus_per_node=8,
        gpu_memory_bytes=mem,
        tp=4,
        pp=8,
        zero_stage=1,
    )
    figs["memory_model_state_gpt3_175b"] = charts.memory_per_gpu(
        by_nodes, mem / 1e9, spec.name, bytes_per_param=rec.bytes_per_param
    )
    figs["memory_wall"] = charts.memory_wall(
        compare.load_reference("memory_wall"), bytes_per_param=rec.bytes_per_param
    )


def _telemetry(charts, figs, scratch: Path):
    log = ROOT / "data/mlperf/v4.1/NVIDIA/results/eos_n64_ngc24.09_nemo/gpt3/result_0.txt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = mlperf.load_results(log)
    phases = telemetry.phases_from_log(results)
    store = scratch / "telemetry"
    if not store.exists():
        synthetic.write_parquet(synthetic.SyntheticConfig(interval_s=10.0), phases, store)
    data = dcgm.scan_parquet(store)
    jobs = telemetry.jobs_in(data)
    data = telemetry.select_job(data, job_id=jobs["job_id"][0] if jobs.height == 1 else None)
    timeline = telemetry.activity_timeline(data, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", every="20s")
    figs["telemetry_tensor_activity"] = charts.telemetry_activity(timeline, phases, synthetic=True)
    grid = telemetry.gpu_heatmap(data, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", every="1s")
    figs["telemetry_heatmap"] = charts.telemetry_heatmap(
        grid, phases=phases, max_bin="120s", synthetic=True
    )
    stats = telemetry.phase_stats(data, phases, level="kind")
    figs["telemetry_phase_distributions"] = charts.telemetry_phase_distributions(
        stats, synthetic=True
    )
    link = telemetry.link_throughput(data, phases, kind="train")
    flagged = telemetry.rail_imbalance(link, "nic_Bps")
    figs["telemetry_rail_throughput"] = charts.telemetry_rail_throughput(
        link, flagged, synthetic=True
    )
    cap = ROOT / "data/telemetry/h200_1gpu_1.3b_20261129T1852Z"
    t1 = dcgm.read_exposition(cap / "telemetry.prom")
    r1 = mlperf.load_results(cap / "gpt_smoke" / "result_0.txt")
    figs["capture_tensor_activity"] = charts.telemetry_activity(
        telemetry.activity_timeline(t1, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", every="5s"),
        telemetry.phases_from_log(r1),
        title="Tensor-core activity, real capture",
        subtitle=f"1 x {r1.runs['accelerator_model'][0]}, GPT 1.3B smoke run",
    )


def _slurm(charts, figs):
    data = slurm.read_sacct_dumps([ROOT / "data/slurm/synthetic/sacct_parsable2.txt"], tz="UTC")
    jobs = data.jobs
    figs["slurm_share_by_state"] = charts.slurm_share_by_state(
        jobstats.share_by_state(jobs), synthetic=True
    )
    figs["slurm_share_by_size"] = charts.slurm_share_by_size(
        jobstats.share_by_size(jobs), synthetic=True
    )
    hist = jobstats.runtime_histogram(jobs, jobstats.RUNTIME_EDGES_LOG_S)
    figs["slurm_runtime_distribution"] = charts.slurm_runtime_distribution(
        hist, jobstats.runtime_ecdf(jobs), synthetic=True
    )
    figs["slurm_gpu_hours_over_time"] = charts.slurm_gpu_hours_over_time(
        jobstats.gpu_hours_over_time(jobs, "1mo"), every="1mo", synthetic=True
    )


def _trace(charts, figs):
    cap = ROOT / "data/traces/h200_1gpu_1.3b_20261201T0923Z"
    traces = trace.read_traces(cap / "trace")
    figs["trace_step_breakdown"] = charts.trace_step_breakdown(trace.step_breakdown(traces))
    mt = trace.match_telemetry(traces, dcgm.read_exposition(cap / "telemetry.prom.gz"))
    figs["trace_vs_telemetry"] = charts.trace_vs_telemetry(mt)


def build(scratch: Path) -> dict:
    """``{figure name: chart}`` for the report's figures; ``scratch`` holds the synthetic telemetry."""
    figs: dict = {}
    _mlperf(charts, figs)
    _eos(charts, figs)
    _memory(charts, figs)
    _telemetry(charts, figs, Path(scratch))
    _slurm(charts, figs)
    _trace(charts, figs)
    return figs


if __name__ == "__main__":
    from trainperf.report import charts

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "figures")
    only = set(sys.argv[2:])
    figs = build(out / ".scratch")
    for name, chart in figs.items():
        if only and name not in only:
            continue
        res = charts.save_chart(chart, name, out)
        print(name, f"written {len(res.written)}, skipped {len(res.skipped)}")
