"""Tests for trainperf.topology and the "Where the GPUs talk" figure.

Expected layouts by hand from Megatron-LM's rank order ("tp-cp-ep-dp-pp", TP fastest): the
docstring example of ``megatron/core/parallel_state.py`` ``initialize_model_parallel`` (16 GPUs,
TP 2, PP 4: TP groups [g0, g1], [g2, g3], ...; pipeline groups [g0, g4, g8, g12], ...; data-parallel
groups [g0, g2], [g1, g3], [g4, g6], ...), and NVIDIA's documented GPT-3 175B layout on 512 GPUs
(64 nodes × 8, TP 4, PP 8, DP 16).
"""

import json
import warnings

import polars as pl
import pytest
import vl_convert as vlc
from helpers import MLPERF

from trainperf import mlperf, topology
from trainperf.report.charts import topology as topology_chart


def _groups(layout, col):
    return sorted(layout.group_by(col).agg(pl.col("rank").sort())["rank"].to_list())


def test_megatron_docstring_example():
    lay = topology.rank_layout(2, 8, tp=2, pp=4)
    assert _groups(lay, "tp_group")[:3] == [[0, 1], [2, 3], [4, 5]]
    assert _groups(lay, "pp_group") == [
        [0, 4, 8, 12],
        [1, 5, 9, 13],
        [2, 6, 10, 14],
        [3, 7, 11, 15],
    ]
    assert _groups(lay, "dp_group")[:4] == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert lay.filter(pl.col("rank") == 13).row(0, named=True) | {} == {
        "rank": 13, "node": 1, "local_gpu": 5, "rail": 5, "tp_rank": 1, "cp_rank": 0,
        "dp_rank": 0, "pp_stage": 3, "tp_group": 6, "dp_group": 7, "pp_group": 1,
    }  # fmt: skip


def test_gpt3_512_gpu_layout_links():
    lay = topology.rank_layout(64, 8, tp=4, pp=8)
    assert lay.height == 512 and lay["dp_rank"].max() == 15
    links = {r["group"]: r for r in topology.group_links(lay).iter_rows(named=True)}
    # TP 4: 512/4 = 128 groups, each GPUs 0-3 or 4-7 of one node: NVLink
    assert links["TP"] | {} == {
        "group": "TP", "n_groups": 128, "group_size": 4, "nodes_per_group": 1,
        "rails_per_group": 4, "intra_node": True, "rail_aligned": False,
        "link": "NVLink (inside a node)",
    }  # fmt: skip
    # PP 8: ranks 64 apart = 8 nodes apart, same local GPU: one rail
    assert links["PP"]["n_groups"] == 64 and links["PP"]["nodes_per_group"] == 8
    assert links["PP"]["rails_per_group"] == 1 and links["PP"]["link"].startswith("rails")
    pipe0 = lay.filter(pl.col("pp_group") == 0).sort("pp_stage")
    assert pipe0["node"].to_list() == [0, 8, 16, 24, 32, 40, 48, 56]
    # DP 16: ranks 4 apart, 2 per node (GPU 0 and 4) over 8 nodes: NVLink inside, two rails
    assert links["DP"]["group_size"] == 16 and links["DP"]["nodes_per_group"] == 8
    assert links["DP"]["rails_per_group"] == 2 and links["DP"]["link"] == "NVLink + rails"


def test_tp_across_nodes_and_bad_sizes():
    links = {
        r["group"]: r
        for r in topology.group_links(topology.rank_layout(4, 8, tp=16)).iter_rows(named=True)
    }
    assert not links["TP"]["intra_node"] and links["TP"]["nodes_per_group"] == 2
    assert links["PP"]["link"] == "none (one rank)"
    with pytest.raises(ValueError, match="does not divide"):
        topology.rank_layout(3, 8, tp=4, pp=4)  # 24 GPUs, 16 per model replica
    with pytest.raises(ValueError, match="positive integer"):
        topology.rank_layout(2, 8, tp=0)


@pytest.fixture(scope="module")
def results():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mlperf.load_results(MLPERF)


def test_job_parameters_from_the_cited_table(results):
    hp = mlperf.hyperparameters(results)
    job = topology.pick_job(hp, results.runs, topology.load_layouts())
    # the bundled Eos v4.1 n64 log: GBS 2048, gradient_accumulation_steps 64 (result_0.txt), no TP/PP
    assert (job["system"], job["round"], job["n_nodes"], job["n_gpus"]) == (
        "eos_n64_ngc24.09_nemo", "v4.1", 64, 512,
    )  # fmt: skip
    assert (job["tp"], job["pp"], job["dp"], job["vp"]) == (4, 8, 16, 6)
    # 2048 / 64 = 32 samples per micro-step over DP 16 → micro-batch 2, as documented
    assert job["implied_micro_batch_size"] == 2 and job["consistent"] is True
    assert "docs.nvidia.com/nemo-framework" in job["source"]
    # without the table no bundled submission has a known layout
    assert topology.pick_job(hp, results.runs, None) is None
    row = hp.filter(pl.col("system") == "eos_n32_ngc24.09_nemo").row(0, named=True)
    with pytest.raises(ValueError, match="parallel_layouts.csv"):
        topology.job_parameters(row, 32, topology.load_layouts())


def test_layout_from_the_log_wins():
    row = {"round": "v5.0", "system": "mine", "benchmark": "gpt3", "n_accelerators": 64,
           "tp": 8, "pp": 2, "vp": None, "cp": None, "micro_batch_size": 1,
           "dp_x_micro_batch": 4, "parallelism_source": "log"}  # fmt: skip
    job = topology.job_parameters(row, 8, topology.load_layouts())
    # 64 / (8 × 2) = 4 data-parallel ranks; 4 samples per micro-step / 4 = micro-batch 1
    assert (job["dp"], job["implied_micro_batch_size"], job["consistent"], job["source"]) == (
        4, 1, True, "log",
    )  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_chart_labels_in_each_language(lang):
    lay = topology.rank_layout(64, 8, tp=4, pp=8)
    spec = topology_chart.topology_chart(lay, "eos_n64", lang=lang).to_dict()
    text = json.dumps(spec, ensure_ascii=False)
    title = spec["title"]["text"]
    assert "TP 4 × PP 8 × DP 16" in title and "64" in title
    if lang == "ja":
        assert "GPU はどこで通信するか" in title and "ノード内で NVLink" in text
        assert "node" not in json.dumps(spec["layer"][0]["encoding"]["x"]["title"])
    else:
        assert title.startswith("Where the GPUs talk") and "inside a node over NVLink" in text
    # one cell per GPU: 512 rectangles in the first layer's data
    data = spec["datasets"][spec["layer"][0]["data"]["name"]]
    assert len(data) == 512


def test_chart_cuts_large_jobs_and_says_so():
    lay = topology.rank_layout(96, 8, tp=8, pp=16)
    spec = topology_chart.topology_chart(lay, "x", max_nodes=64).to_dict()
    assert "first 64 of 96 nodes shown" in spec["title"]["subtitle"]
    with pytest.raises(ValueError):
        topology_chart.topology_chart(lay, "x", lang="fr")


def test_saved_in_the_languages_the_main_job_gives_without_a_warning(tmp_path, monkeypatch):
    # in the main job's kernels $TRAINPERF_FIGURE_LANGS names the languages it found fonts for
    # ("en" without a CJK font, said once by the job): the layout figure is written in those
    # only, and no cell prints a warning of its own (it would show in the book)
    monkeypatch.setenv("TRAINPERF_FIGURE_LANGS", "en")
    lay = topology.rank_layout(8, 8, tp=4, pp=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        paths = topology_chart.save_topology_chart(lay, "x", "layout", tmp_path, formats=("svg",))
    assert paths == [tmp_path / "layout.svg"] and not (tmp_path / "ja").exists()


def test_rails_are_named_on_a_right_axis_vega_lays_out():
    """Issue 39 review: the rail names were a text layer beyond the cells, which Vega does not
    count when it places the legend; on the slide, with larger text, "パイプラインステージ" sat on
    "GPU 0 → レール 0". They are the labels of a right-hand y axis now, one per GPU row."""
    lay = topology.rank_layout(64, 8, tp=4, pp=8)
    spec = topology_chart.topology_chart(lay, "x", lang="ja").to_dict()
    assert not any(
        u["mark"]["type"] == "text" for u in spec["layer"] if isinstance(u["mark"], dict)
    )
    svg = vlc.vegalite_to_svg(spec)
    for i in range(8):  # every row named, none dropped as overlapping
        assert f"GPU {i} → レール {i}" in svg
