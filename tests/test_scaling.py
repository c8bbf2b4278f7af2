"""Strong scaling (trainperf.compare.scaling) and the peer logs bundled beside Eos's."""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from helpers import MLPERF, ROOT

from trainperf import compare, mlperf
from trainperf.compare import scaling


def _points(rows):
    return pl.DataFrame(
        rows,
        schema=["system", "round", "benchmark", "n_nodes", "n_gpus", "time_to_train_min", "source"],
        orient="row",
    ).with_columns((pl.col("n_gpus") * pl.col("time_to_train_min") / 60).alias("gpu_hours"))


def test_efficiency_is_gpu_time_at_the_base_over_gpu_time_at_scale():
    # hand computation: 32 nodes 100 min, 64 nodes 55 min: E = 32*100 / (64*55) = 3200/3520
    pts = _points(
        [
            ("A", "v1", "gpt3", 32, 256, 100.0, "logs"),
            ("A", "v1", "gpt3", 64, 512, 55.0, "logs"),
            ("A", "v2", "gpt3", 96, 768, 30.0, "transcribed"),
            ("B", "v1", "gpt3", 32, 256, 90.0, "logs"),
        ]
    )
    eff = scaling.strong_scaling(pts)
    a = {
        (r["from_nodes"], r["to_nodes"]): r for r in eff.filter(pl.col("system") == "A").to_dicts()
    }
    assert set(a) == {(32, 64), (32, 96), (64, 96)}
    assert a[(32, 64)]["efficiency"] == pytest.approx(3200 / 3520)
    assert a[(32, 64)]["speedup"] == pytest.approx(100 / 55)
    assert a[(32, 64)]["ideal_speedup"] == 2
    assert a[(32, 64)]["same_round"] and a[(32, 64)]["source"] == "logs"
    # 64 -> 96 across rounds, one side transcribed: E = 64*55 / (96*30) = 3520/2880 (super-linear)
    assert a[(64, 96)]["efficiency"] == pytest.approx(3520 / 2880)
    assert not a[(64, 96)]["same_round"] and a[(64, 96)]["source"] == "transcribed"
    # a system with one scale has no pair
    assert eff.filter(pl.col("system") == "B").height == 0


@pytest.fixture(scope="module")
def bundled_scores():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlperf.load_results(MLPERF).scores


def test_scaling_points_take_the_logs_where_bundled(bundled_scores):
    pub = compare.load_published_results(ROOT / "data/reference/published_results.csv")
    pts = scaling.scaling_points(pub, ["SAKURAONE", "Eos", "OCI BM.GPU.H100.8"], bundled_scores)
    by = {(r["system"], r["round"], r["n_nodes"]): r for r in pts.to_dicts()}
    # Oracle's 1,536-GPU result from its logs: published score 19.69 min (MLCommons v4.1 table)
    oci = by[("OCI BM.GPU.H100.8", "v4.1", 192)]
    assert oci["source"] == "logs" and round(oci["time_to_train_min"], 2) == 19.69
    assert by[("OCI BM.GPU.H100.8", "v4.1", 384)]["source"] == "transcribed"  # log not bundled
    assert by[("SAKURAONE", "v4.1", 32)]["source"] == "transcribed"
    eos32 = by[("Eos", "v4.1", 32)]
    assert eos32["source"] == "logs" and round(eos32["time_to_train_min"], 2) == 96.66
    assert eos32["gpu_hours"] == pytest.approx(256 * eos32["time_to_train_min"] / 60)
    # Eos v4.1 32 -> 64 nodes from the published scores 96.66 and 49.80 min: 0.9706 (to 3 digits)
    eff = scaling.strong_scaling(pts)
    e = eff.filter(
        (pl.col("system") == "Eos") & pl.col("same_round") & (pl.col("from_nodes") == 32)
    ).row(0, named=True)
    assert e["to_nodes"] == 64 and e["efficiency"] == pytest.approx(
        32 * 96.66 / (64 * 49.80), abs=1e-3
    )
    # SAKURAONE 32 -> 96 from its transcribed 105.31 and 41.86 min
    s = eff.filter(
        (pl.col("system") == "SAKURAONE")
        & (pl.col("from_nodes") == 32)
        & (pl.col("to_nodes") == 96)
    ).row(0, named=True)
    assert s["efficiency"] == pytest.approx(32 * 105.31 / (96 * 41.86))


def test_peer_logs_are_never_the_reference():
    # data/mlperf holds Oracle's logs beside Eos's: the comparison's reference is Eos only
    cmp = compare.cluster_comparison(
        "SAKURAONE",
        8,
        "H100 SXM",
        MLPERF,
        published=ROOT / "data/reference/published_results.csv",
    )
    assert cmp.height
    refs = set(cmp["reference_result"].drop_nulls().to_list())
    assert refs and all(r.startswith("eos") for r in refs), refs
