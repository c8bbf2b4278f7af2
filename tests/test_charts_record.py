"""The record's figure per benchmark (issue 36 item 3) and the frame behind it
(trainperf.compare.record_points): network families from the systems JSONs' strings, the evaluated
results marked and labelled, English and Japanese."""

from __future__ import annotations

import html
import re

import polars as pl
import pytest

from trainperf.compare.record_points import network_family, rank_peers, record_points
from trainperf.record import RECORD_SCHEMA
from trainperf.report import charts
from trainperf.report.charts import export, fonts, i18n
from trainperf.report.charts.theme import theme


@pytest.mark.parametrize(
    ("host", "acc", "nodes", "accelerator", "gpus", "family"),
    [
        # Eos (v4.1 systems/eos_n64_ngc24.09_nemo.json): the compute part names IB
        ("Storage: 2x ConnectX-7 IB NDR 400Gb/s, Compute: 8x ConnectX-7 IB NDR 400Gb/s, "
         "Management: 1x Ethernet 100Gb/s", "NVLINK Gen4 900 GB/s + NVSWITCH Gen3", 64, "H100 SXM", 512, "InfiniBand"),
        # Oracle v4.1 1536xBM.GPU.H100.8
        ("ROCE2; Data bandwidth for GPU-PCIe: 504 GB/s; PCIe-NIC: 500 GB/s", "NVLink", 192, "H100 SXM", 1536,
         "Ethernet/RoCE"),
        # a management Ethernet beside an unnamed compute NIC is not the compute network
        ("Storage: 2x BF3 ConnectX-7 400Gb/s, Compute: 8x BF3 ConnectX-7 400Gb/s, Management: 2x100Gb/s "
         "Ethernet NIC", "NVLink", 4, "B200", 32, "other"),
        ("Ethernet, Infiniband", "NVLINK Gen4", 2, "H100 SXM", 16, "InfiniBand"),
        ("8x ConnectX-7 400 GbE, RoCEv2", None, None, None, None, "Ethernet/RoCE"),
        # one node, or one NVL72 rack: the GPUs never leave NVLink
        ("Gig Ethernet", "NVLINK Gen4 900 GB/s + NVSWITCH Gen3", 1, "H100 SXM", 8, "NVLink only"),
        ("4x ConnectX-8 IB XDR 800 Gb/s", "18x 5th Gen NVLink, 14.4 TB/s", 18, "GB200", 72, "NVLink only"),
        ("4x ConnectX-8 IB XDR 800 Gb/s", "18x 5th Gen NVLink, 14.4 TB/s", 36, "GB200", 144, "InfiniBand"),
        (None, None, 128, None, 512, "other"),  # a TPU pod: no host networking string
    ],
)  # fmt: skip
def test_network_family_from_the_systems_strings(host, acc, nodes, accelerator, gpus, family):
    assert network_family(host, acc, nodes, accelerator, gpus) == family


def _record() -> pl.DataFrame:
    rows = [
        # round, submitter, system, accelerator, host, nodes, gpus, minutes, sha
        (
            "v4.1",
            "NVIDIA",
            "eos_n32",
            "H100 SXM",
            "Compute: 8x ConnectX-7 IB NDR",
            32,
            256,
            96.66,
            "a",
        ),
        (
            "v4.1",
            "NVIDIA",
            "eos_n64",
            "H100 SXM",
            "Compute: 8x ConnectX-7 IB NDR",
            64,
            512,
            49.80,
            "b",
        ),
        ("v4.1", "Oracle", "1536xBM", "H100 SXM", "ROCE2", 192, 1536, 19.69, "c"),
        ("v4.0", "SMC", "64xSMC", "H100 SXM", None, 64, 512, 56.87, "d"),
        (
            "v4.0",
            "SMC",
            "64xSMC",
            "H100 SXM",
            None,
            64,
            512,
            56.87,
            "d",
        ),  # listed twice: counted once
        ("v4.1", "Google", "tpu-512", None, None, 128, 512, 102.08, "e"),
    ]
    cols = ["round", "submitter", "system", "accelerator", "host_interconnect", "n_nodes", "n_gpus",
            "score_min", "logs_sha256"]  # fmt: skip
    f = pl.DataFrame(rows, schema=cols, orient="row")
    return f.with_columns(
        pl.lit("gpt3").alias("benchmark"),
        pl.when(pl.col("accelerator").is_null()).then(pl.lit("TPU-trillium")).otherwise(pl.lit("NVIDIA H100-SXM5-80GB")).alias("accelerator_model_name"),
        pl.lit("NVLINK Gen4").alias("accelerator_interconnect"),
    ).with_columns(pl.lit(None, t).alias(c) for c, t in RECORD_SCHEMA.items() if c not in cols + [
        "benchmark", "accelerator_model_name", "accelerator_interconnect"]).select(list(RECORD_SCHEMA)).cast(RECORD_SCHEMA)  # fmt: skip


EVALUATED = pl.DataFrame(
    {"system": ["SAKURAONE"] * 2, "n_gpus": [256, 512], "score_min": [105.31, 58.30],
     "accelerator": ["H100 SXM"] * 2, "network": ["800GbE RoCEv2"] * 2, "round": ["v4.1"] * 2}
)  # fmt: skip


def test_record_points_gpu_minutes_generation_and_network():
    pts = record_points(_record(), "gpt3", EVALUATED)
    assert pts.height == 7  # five distinct results and two evaluated
    eos = pts.filter(pl.col("system") == "eos_n32").row(0, named=True)
    assert eos["gpu_min"] == pytest.approx(256 * 96.66)  # GPUs x minutes
    assert (eos["generation"], eos["network"]) == ("Hopper", "InfiniBand")
    tpu = pts.filter(pl.col("system") == "tpu-512").row(0, named=True)
    assert (tpu["accelerator"], tpu["generation"], tpu["network"]) == (
        "TPU-trillium",
        "other",
        "other",
    )
    ev = pts.filter(pl.col("evaluated"))
    assert ev["label"].to_list() == ["SAKURAONE 256 GPUs", "SAKURAONE 512 GPUs"]
    assert ev["network"].to_list() == ["Ethernet/RoCE"] * 2
    assert pts.filter(pl.col("round") == "v4.1").height == 6
    assert record_points(_record(), "gpt3", rounds=["v4.0"]).height == 1


def test_rank_peers_is_record_rank_with_each_peers_network():
    """SAKURAONE at 256 GPUs, 105.31 min: 26,959 GPU-min. Band 128..512 GPUs in v4.1: eos_n32
    (24,745), eos_n64 (25,498), tpu-512 (52,265): by hand, rank 3 of 4."""
    rank, band = rank_peers(
        _record(), "gpt3", 256, 105.31, ["v4.1"], "SAKURAONE 256 GPUs", "RoCEv2"
    )
    assert (rank["record_rank"], rank["record_peers"]) == (3, 4)
    assert band["system"].to_list() == ["eos_n32", "eos_n64", "SAKURAONE 256 GPUs", "tpu-512"]
    assert band["rank"].to_list() == [1, 2, 3, 4]
    assert band["network"].to_list() == ["InfiniBand", "InfiniBand", "Ethernet/RoCE", "other"]
    # over v4.0 and v4.1 taken together, SMC's 512-GPU result (29,117 GPU-min, listed twice) counts once
    rank, band = rank_peers(_record(), "gpt3", 256, 105.31, ["v4.0", "v4.1"], "S", "RoCEv2")
    assert (rank["record_rank"], rank["record_peers"]) == (3, 5)
    assert rank["record_best"] == "v4.1 NVIDIA eos_n32 (256 GPUs)"  # its own round, not "v4.0+v4.1"


def _texts(svg: str) -> list[str]:
    return [
        html.unescape(t) for t in re.findall(r"<(?:text|tspan)[^>]*>([^<]+)</(?:text|tspan)>", svg)
    ]


def test_record_chart_marks_legends_and_labels():
    ch = charts.record_results(record_points(_record(), "gpt3", EVALUATED), "gpt3", "v4.0–v4.1")
    spec = ch.to_dict()
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    assert spec["layer"][0]["encoding"]["y"]["scale"]["type"] == "log"
    svg = charts.render_svg(spec)
    texts = _texts(svg)
    # one evaluated system: each mark says its GPU count, the subtitle names the system
    assert "256 GPUs" in texts and "512 GPUs" in texts
    assert "large outlined marks: the evaluated results (SAKURAONE)" in texts
    two = pl.concat([EVALUATED, EVALUATED.head(1).with_columns(pl.lit("Other").alias("system"))])
    texts2 = _texts(
        charts.render_svg(
            charts.record_results(record_points(_record(), "gpt3", two), "gpt3").to_dict()
        )
    )
    assert {"SAKURAONE 256 GPUs", "SAKURAONE 512 GPUs", "Other 256 GPUs"} <= set(texts2)
    for t in (
        "Hopper",
        "other",
        "InfiniBand",
        "Ethernet/RoCE",
        "accelerator generation",
        "network",
    ):
        assert t in texts
    assert "GPT-3 175B: every published result by scale" in texts
    # five record marks (SMC's twice-listed result once) and two evaluated ones, outlined in black
    groups = dict(
        re.findall(r'<g class="mark-symbol role-mark (layer_\d)_marks"[^>]*>(.*?)</g>', svg, re.S)
    )
    assert groups["layer_0"].count("<path") == 5 and 'stroke="black"' not in groups["layer_0"]
    assert groups["layer_1"].count("<path") == 2 and groups["layer_1"].count('stroke="black"') == 2


@pytest.mark.skipif(
    fonts.find_cjk_font().family is None,
    reason="no CJK font installed (apt-get install fonts-noto-cjk)",
)
def test_record_chart_is_japanese_throughout():
    ch = charts.record_results(record_points(_record(), "gpt3", EVALUATED), "gpt3", "v4.0–v4.1")
    svg = export.render_svg(i18n.localize(ch.to_dict(), "ja", fonts.find_cjk_font().family))
    texts = _texts(svg)
    allowed = re.compile(
        r"(?<![A-Za-z])(?:[A-Z][A-Za-z0-9.+/]*|GPU|v\d[\d.–]*|\d[\w.,]*)(?![A-Za-z])"
    )
    assert [t for t in texts if re.findall(r"[A-Za-z]{2,}", allowed.sub(" ", t))] == []
    joined = " ".join(texts)
    for t in (
        "公開済み全結果の規模別比較",
        "アクセラレータ世代",
        "ネットワーク",
        "その他",
        "256 GPU",
        "評価対象の結果 (SAKURAONE)",
    ):
        assert t in joined


def test_a_generation_has_one_colour_in_every_benchmarks_chart():
    # Nebius B200 book (v5.1 record): the Llama 2 70B LoRA chart has Ampere points (Juniper A100),
    # the Llama 3.1 8B chart none; Hopper was orange in the first and blue in the second, Blackwell
    # green and orange, in one figure of the book. A generation keeps its colour whichever others
    # a chart holds.
    pts = record_points(_record(), "gpt3", EVALUATED)
    with_ampere = pts.with_columns(
        pl.when(pl.col("system") == "eos_n32").then(pl.lit("Ampere")).otherwise("generation").alias("generation")
    ).with_columns(
        pl.when(pl.col("system") == "1536xBM").then(pl.lit("Blackwell")).otherwise("generation").alias("generation")
    )  # fmt: skip
    without = with_ampere.filter(pl.col("generation") != "Ampere")

    def colour_of(points):
        enc = charts.record_results(points, "gpt3").to_dict()["layer"][0]["encoding"]["color"]
        return dict(zip(enc["scale"]["domain"], enc["scale"]["range"], strict=True))

    a, b = colour_of(with_ampere), colour_of(without)
    assert "Ampere" in a and "Ampere" not in b
    for g in ("Hopper", "Blackwell", "other"):
        assert a[g] == b[g]
    assert len(set(a.values())) == len(a)  # still one colour per generation


def test_many_generations_do_not_widen_the_chart():
    # the record's Llama 2 70B LoRA chart holds all seven generations; one legend row made it
    # 1,025 px wide against 807 px for the Llama 3.1 8B chart (four), so the book shrank its text
    # (Nebius B200 book, 2026-12-08). With the report's theme, as the book exports it.
    pts = record_points(_record(), "gpt3", EVALUATED)
    gens = ["Ampere", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 3", "CDNA 4", "other"]
    many = pts.with_columns(
        pl.Series("generation", [gens[i % len(gens)] for i in range(pts.height)])
    )

    def width(points):
        spec = charts.record_results(points, "gpt3").to_dict()
        spec["config"] = theme()["config"]
        return float(re.search(r'width="([0-9.]+)"', charts.render_svg(spec)).group(1))

    assert many["generation"].n_unique() == 7 and pts["generation"].n_unique() == 2
    # the legend wraps in rows of four: at most a legend row's worth wider (one row of seven was
    # 1.45x here, 929 against 640 px)
    assert width(many) <= 1.15 * width(pts)
