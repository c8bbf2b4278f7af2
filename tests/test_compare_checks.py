"""Tests for trainperf.compare.checks: caveat checks and the candidate meanings of a quoted ratio.

Expected values are computed by hand in the comments from the rows of
data/reference/published_results.csv (SAKURAONE: arXiv 2604.13600 Table 9, as relayed by a
third-party summary; Eos: the MLCommons result logs, bundled in data/mlperf) and from the
bundled logs' own numbers (Eos v4.1 n32 scored run: 889.41 tokens/s/GPU, 957.40 TFLOP/s/GPU).
"""

import warnings

import polars as pl
import pytest
from helpers import MLPERF

from trainperf import compare, mlperf
from trainperf.compare import PUBLISHED_SCHEMA, consistency_checks, ratio_candidates

F_TOK = 1_076_442_955_776  # 72·96·12288²·(1 + 2048/(6·12288) + 51200/(12·96·12288))
BUDGET = 23 * 24576 * 2048  # 1,157,627,904 tokens: 23 evaluations of 24,576 sequences


@pytest.fixture(scope="module")
def published():
    return compare.load_published_results()


@pytest.fixture(scope="module")
def runs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlperf.runs_with_throughput(mlperf.load_results(MLPERF))


def _check(frame, n_nodes, check):
    (row,) = frame.filter((pl.col("n_nodes") == n_nodes) & (pl.col("check") == check)).rows(
        named=True
    )
    return row


def test_sakuraone_96_nodes_implies_fewer_flops_per_token(published):
    c = consistency_checks(published, systems=["SAKURAONE"])
    r = _check(c, 96, "flops_per_token")
    # 710.73e12 / 714.23 = 0.995100e12 FLOP/token; 0.995100/1.076443 − 1 = −7.557 %
    assert r["value"] == pytest.approx(0.995100e12, rel=1e-5)
    assert r["expected"] == F_TOK
    assert r["rel_diff"] == pytest.approx(-0.07557, abs=5e-5)
    assert r["verdict"] == "inconsistent"
    assert "0.995e12" in r["detail"] and "1.076e12" in r["detail"]
    # 32 nodes: 757.13/707.62 = 1.069967e12, −0.60 %: within the 1 % that rounding explains
    r32 = _check(c, 32, "flops_per_token")
    assert r32["value"] == pytest.approx(1.069967e12, rel=1e-5)
    assert r32["verdict"] == "consistent"


def test_sakuraone_32_nodes_throughput_cannot_cover_the_tokens(published):
    c = consistency_checks(published, systems=["SAKURAONE"])
    r = _check(c, 32, "tokens_covered")
    # 707.62 × 256 = 181,150.72 tokens/s; × 105.31 × 60 s = 1.144620e9 tokens
    # against 23 × 24,576 × 2048 = 1,157,627,904: 1.144620/1.157628 − 1 = −1.124 %
    assert r["value"] == pytest.approx(181_150.72 * 105.31 * 60, rel=1e-12)
    assert r["value"] == pytest.approx(1.144620e9, rel=1e-6)
    assert r["expected"] == BUDGET
    assert r["rel_diff"] == pytest.approx(-0.01124, abs=5e-5)
    assert r["verdict"] == "inconsistent"
    # the tokens alone take 1,157,627,904 / 181,150.72 / 60 = 106.51 min > 105.31
    assert "106.5 min" in r["detail"]
    # 64 nodes: 758 × 512 × 58.30 × 60 = 1.35755e9 ≥ budget (+17.3 %)
    r64 = _check(c, 64, "tokens_covered")
    assert r64["value"] == pytest.approx(758 * 512 * 58.30 * 60)
    assert r64["verdict"] == "consistent"


def test_sakuraone_64_nodes_time_equals_eos_v31_score(published, runs):
    c = consistency_checks(published, systems=["SAKURAONE"], runs=runs)
    r = _check(c, 64, "duplicate_time")
    assert r["value"] == 58.30 and r["expected"] == 58.30
    assert r["verdict"] == "inconsistent"
    # the bundled Eos v3.1 n64 runs: 58.247, 58.302, 58.353 min (data/mlperf/SOURCES.md)
    assert (
        "Eos v3.1 64-node score (58.30 min; its bundled runs 58.247/58.302/58.353 min)"
        in (r["detail"])
    )
    assert "training_results_v3.1" in r["source"]
    assert _check(c, 32, "duplicate_time")["verdict"] == "consistent"
    # one caveat per scale, each naming what failed
    cav = {r["n_nodes"]: r for r in compare.caveats_by_scale(c).iter_rows(named=True)}
    assert [cav[n]["n_failed"] for n in (32, 64, 96)] == [1, 1, 1]
    assert "0.995e12" in cav[96]["caveat"] and "58.30" in cav[64]["caveat"]


def test_bundled_eos_rows_are_consistent(published):
    # Eos v4.1 n32: 957.5/889.5 = 1.07645e12 (+0.0 %); 889.5 × 256 × 96.664 × 60 = 1.3207e9
    # ≥ 1,207,959,552 (+9.3 %): every check of every Eos row passes
    c = consistency_checks(published, systems=["Eos"])
    assert (
        c.height
        == 3
        * published.filter((pl.col("system") == "Eos") & (pl.col("benchmark") == "gpt3")).height
    )
    flops = c.filter(pl.col("check") == "flops_per_token", pl.col("verdict") != "not checked")
    assert flops.height >= 4 and (flops["verdict"] == "consistent").all()
    cov = c.filter(pl.col("check") == "tokens_covered", pl.col("verdict") != "not checked")
    assert (cov["verdict"] == "consistent").all() and (cov["rel_diff"] > 0.05).all()
    r = _check(c.filter(pl.col("round") == "v4.1"), 32, "tokens_covered")
    assert r["rel_diff"] == pytest.approx(889.5 * 256 * 96.664 * 60 / 1_207_959_552 - 1, rel=1e-9)


def _own(rows):
    """A user's own cluster's rows in the published-results schema."""
    base = {k: None for k in PUBLISHED_SCHEMA}
    return pl.DataFrame([{**base, **r} for r in rows], schema=PUBLISHED_SCHEMA)


def test_checks_apply_to_any_rows():
    # a consistent own row: 800 tokens/s × 861.15 TFLOP/s (800 × 1.076443e12 = 861.15e12);
    # 800 × 512 × 55 min × 60 = 1.3517e9 tokens ≥ 1,207,959,552
    own = _own(
        [
            {"system": "MyCluster", "round": "v4.1", "benchmark": "gpt3", "n_gpus": 512,
             "n_nodes": 64, "minutes": 55.0, "tokens_to_converge": 1_207_959_552,
             "tokens_per_s_per_gpu": 800.0, "tflops_per_gpu": 861.15, "verified": False},
            {"system": "MyCluster", "round": "v4.1", "benchmark": "gpt3", "n_gpus": 256,
             "n_nodes": 32, "minutes": 120.0, "verified": False},
        ]
    )  # fmt: skip
    c = consistency_checks(own)
    assert c.height == 6
    assert _check(c, 64, "flops_per_token")["verdict"] == "consistent"
    tok = _check(c, 64, "tokens_covered")
    assert tok["expected"] == 1_207_959_552 and tok["source"] == "tokens_to_converge of the row"
    assert tok["value"] == pytest.approx(800 * 512 * 55 * 60)
    # no throughput published: the two throughput checks are "not checked", never a guess
    assert _check(c, 32, "flops_per_token")["verdict"] == "not checked"
    assert _check(c, 32, "tokens_covered")["verdict"] == "not checked"
    assert set(c["verdict"]) <= {"consistent", "not checked"}


def test_ratio_candidates_from_logs(published, runs):
    t = ratio_candidates(published, "SAKURAONE", runs=runs, quoted=1.28, tolerance=0.02)
    got = {(r["n_nodes"], r["definition"]): r for r in t.iter_rows(named=True)}
    # time to train: 105.31/96.664 = 1.0894; 58.30/49.795 = 1.1708; 41.86/40.626 = 1.0304;
    # extrapolated: 49.795 × 64/96 = 33.197, 41.86/33.197 = 1.2610
    assert got[32, "time to train, measured reference"]["ratio"] == pytest.approx(1.0894, abs=1e-4)
    assert got[64, "time to train, measured reference"]["ratio"] == pytest.approx(1.1708, abs=1e-4)
    assert got[96, "time to train, measured reference"]["ratio"] == pytest.approx(1.0304, abs=1e-4)
    ex = got[96, "time to train, extrapolated reference"]
    assert ex["reference_value"] == pytest.approx(33.1967, abs=1e-4)
    assert ex["ratio"] == pytest.approx(1.2610, abs=1e-4) and ex["near_quoted"]
    assert (32, "time to train, extrapolated reference") not in got
    # step level at 32 nodes from the Eos v4.1 n32 scored run (96.664 min, result_2.txt):
    # 957.40/757.13 = 1.2645 (within 0.02 of 1.28); 889.41/707.62 = 1.2569 (0.023 off: not)
    tf = got[32, "TFLOP/s per GPU, step level"]
    assert tf["reference_value"] == pytest.approx(957.40, abs=0.01)
    assert tf["ratio"] == pytest.approx(957.40 / 757.13, abs=1e-4) and tf["near_quoted"]
    tps = got[32, "tokens/s per GPU, step level"]
    assert tps["reference_value"] == pytest.approx(889.41, abs=0.01)
    assert tps["ratio"] == pytest.approx(889.41 / 707.62, abs=1e-4) and not tps["near_quoted"]
    assert "recomputed from its log" in tps["reference_label"]
    # 64 nodes: 929/815 ≈ 1.14, far from 1.28
    assert not got[64, "TFLOP/s per GPU, step level"]["near_quoted"]
    near = {k for k, r in got.items() if r["near_quoted"]}
    assert near == {
        (32, "TFLOP/s per GPU, step level"),
        (96, "time to train, extrapolated reference"),
    }


def test_ratio_candidates_from_published_rows(published):
    # without logs the published Eos row is used: 957.5/757.13 = 1.26464
    # 1.28: the ratio quoted in the SAKURAONE talk (the demo config's published.quoted_ratio)
    t = ratio_candidates(published, "SAKURAONE", quoted=1.28)
    (r,) = t.filter(
        (pl.col("n_nodes") == 32) & (pl.col("definition") == "TFLOP/s per GPU, step level")
    ).rows(named=True)
    assert r["reference_value"] == 957.5
    assert r["ratio"] == pytest.approx(1.26464, abs=1e-5)
    assert r["diff_from_quoted"] == pytest.approx(1.26464 - 1.28, abs=1e-5)
    assert "published row" in r["reference_label"]
    # a tolerance of 0.01 leaves none of the candidates near 1.28
    assert not ratio_candidates(published, "SAKURAONE", quoted=1.28, tolerance=0.01)[
        "near_quoted"
    ].any()


def test_ratio_candidates_have_no_default_quoted_ratio(published):
    # the quoted ratio is the caller's data (no case-study default): without it, a TypeError
    with pytest.raises(TypeError, match="quoted"):
        ratio_candidates(published, "SAKURAONE")
    # another quoted value moves the verdicts: 1.0894 (32 nodes, measured) is within 0.02 of 1.09
    t = ratio_candidates(published, "SAKURAONE", quoted=1.09)
    (r,) = t.filter(
        (pl.col("n_nodes") == 32) & (pl.col("definition") == "time to train, measured reference")
    ).rows(named=True)
    assert r["near_quoted"] and r["quoted"] == 1.09
