"""Figure 4.1 (``comparison_ratio_by_gpus``): an extrapolated point is drawn as the one-sided bound it is."""

import json

import polars as pl
import pytest

from trainperf import compare
from trainperf.report import charts
from trainperf.report.charts.eos import KIND_LABELS
from trainperf.report.charts.i18n import localize


def _frame():
    row = dict.fromkeys(compare.COMPARISON_SCHEMA)
    # (n_gpus, ratio, kind, ratio_low, ratio_high): measured, interpolated (two-sided), beyond the
    # reference's largest run (ratio_high = ratio: at most) and below its smallest (ratio_low = ratio)
    rows = [
        {**row, "benchmark": "llama2_70b_lora", "n_gpus": n, "ratio": r, "reference_kind": k,
         "ratio_low": lo, "ratio_high": hi}
        for n, r, k, lo, hi in (
            (8, 1.06, "measured", 1.06, 1.06),
            (32, 1.07, "interpolated", 0.89, 1.17),
            (1536, 0.97, "extrapolated", None, 0.97),
            (4, 0.45, "extrapolated", 0.45, None),
        )
    ]  # fmt: skip
    return pl.DataFrame(rows, schema=compare.COMPARISON_SCHEMA)


def _layers(spec):
    (panel,) = spec["hconcat"]
    return panel["layer"], spec["datasets"]


def test_an_extrapolated_point_is_a_one_sided_bound_with_its_side_named():
    spec = charts.comparison_ratio_by_gpus(_frame()).to_dict()
    layers, datasets = _layers(spec)
    (rows,) = [v for v in datasets.values() if "n_gpus" in v[0]]  # the panel's results
    by_gpus = {r["n_gpus"]: r for r in rows}
    # axis: the largest drawn value is 1.17 (the interpolated bar's top), the lower bound's arrow
    # tip needs ratio / 0.9 = 0.5 < 1.17 * 1.15; top = ceil(1.17 * 1.15 / 0.25) * 0.25
    #   = ceil(5.382) * 0.25 = 1.5; the arrow is 0.1 of it: 0.15
    points = next(lay for lay in layers if lay["mark"]["type"] == "point")
    assert points["encoding"]["y"]["scale"]["domain"] == [0.0, 1.5]
    up, low = by_gpus[1536], by_gpus[4]
    # open sides: down from an upper bound, up from a lower one
    assert up["tip"] == pytest.approx(0.97 - 0.15) and up["bound_text"] == "≤ 0.97"
    assert low["tip"] == pytest.approx(0.45 + 0.15) and low["bound_text"] == "≥ 0.45"
    assert by_gpus[8]["tip"] is None and by_gpus[32]["tip"] is None
    # markers: triangles pointing to the open side; legend entries say which side
    shape = points["encoding"]["shape"]["scale"]
    sides = dict(zip(shape["domain"], shape["range"], strict=True))
    assert sides[up["kind_label"]] == "triangle-down" and "at most" in up["kind_label"]
    assert sides[low["kind_label"]] == "triangle-up" and "at least" in low["kind_label"]
    assert sides[by_gpus[32]["kind_label"]] == "circle"
    # the interpolated point keeps its two-sided bar 0.89 .. 1.17; the dashed arrows are separate
    marks = [(lay["mark"]["type"], lay["mark"].get("strokeDash")) for lay in layers]
    assert ("rule", [4, 3]) in marks
    texts = [lay for lay in layers if lay["mark"]["type"] == "text"]
    # the label on the closed side: above "≤" (dy < 0), below "≥" (dy > 0)
    assert sorted(t["mark"]["dy"] for t in texts) == [-9, 9]
    assert by_gpus[32]["lo"] == 0.89 and by_gpus[32]["hi"] == 1.17


def test_the_bound_side_is_in_japanese_too():
    spec = localize(charts.comparison_ratio_by_gpus(_frame()).to_dict(), "ja")
    text = json.dumps(spec, ensure_ascii=False)
    assert "この値以下" in text and "この値以上" in text
    for label in KIND_LABELS.values():
        assert label not in text
