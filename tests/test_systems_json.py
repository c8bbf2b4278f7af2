"""The cluster from a results folder's systems/*.json, and the scale-up domain in the book's words.

The JSON fields and values copy those of mlcommons/training_results_v5.1
NVIDIA/systems/theia_ngpu8_ngc25.09_nemo.json (a 2-tray slice of a GB300 NVL72 rack) and of a
RoCE cloud entry; expected items are read off those fields by hand."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from test_precision_v51 import F_TOK, _log

from trainperf.compare import cluster_comparison
from trainperf.config import parse_config
from trainperf.config.plan import config_values, report_overrides
from trainperf.mlperf.checks import MLPerfLogWarning
from trainperf.mlperf.systems import cluster_items, system_descriptions
from trainperf.report import cli
from trainperf.topology.domain import scaleup_domain, tp_domain_sentence

THEIA = {
    "submitter": "NVIDIA", "system_name": "Theia (1x NVIDIA GB300 NVL72)", "number_of_nodes": "2",
    "host_processors_per_node": "2", "host_processor_model_name": "Neoverse-V2",
    "host_memory_capacity": "2.0 TB", "host_storage_type": "NVMe SSD",
    "host_storage_capacity": "8x 3.5TB NVMe E1.s", "host_networking": "4x ConnectX-8 IB XDR 800 Gb/s",
    "host_networking_topology": "", "accelerators_per_node": "4",
    "accelerator_model_name": "NVIDIA Blackwell Ultra GPU (GB300)",
    "accelerator_interconnect": "NVLINK Gen5 1800 GB/s + NVSWITCH Gen5",
    "framework": "NVIDIA NeMo Framework Release 25.09",
}  # fmt: skip
CLOUD = {
    "submitter": "X", "number_of_nodes": "16", "accelerators_per_node": "8",
    "accelerator_model_name": "AMD Instinct MI355X", "host_processors_per_node": "2",
    "host_processor_model_name": "AMD EPYC 9575F",
    "host_networking": "8x Pollara 400 GbE RoCEv2", "host_networking_topology": "rail-optimized, 2-tier",
    "framework": "PyTorch 2.8, ROCm 7.0",
}  # fmt: skip


def _write(tmp_path, name, desc):
    d = tmp_path / "X" / "systems"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps(desc) if isinstance(desc, dict) else desc)


def test_items_from_the_json_with_their_file(tmp_path):
    _write(tmp_path, "theia_ngpu8", THEIA)
    _write(tmp_path, "cloud", CLOUD)
    d = system_descriptions(tmp_path)
    assert d["system"].to_list() == ["cloud", "theia_ngpu8"]
    theia = d.row(1, named=True)
    assert (theia["n_nodes"], theia["accelerators_per_node"], theia["accelerator"]) == (
        2,
        4,
        "GB300",
    )
    assert theia["scaleup_domain"] == 72
    items = {r["item"]: r for r in cluster_items(theia).iter_rows(named=True)}
    assert items["Compute nodes"]["value"] == "2"
    assert items["GPUs per node"]["value"] == "4 x NVIDIA Blackwell Ultra GPU (GB300)"
    assert items["CPUs per node"]["value"] == "2 x Neoverse-V2"
    assert items["Compute network per node"]["value"] == "4x ConnectX-8 IB XDR 800 Gb/s"
    assert items["Software"]["value"] == "NVIDIA NeMo Framework Release 25.09"
    assert items["Compute nodes"]["source"].endswith("theia_ngpu8.json (number_of_nodes)")
    assert "Fabric" not in items  # host_networking_topology is empty: not given, not made up
    cloud = {
        r["item"]: r["value"] for r in cluster_items(d.row(0, named=True)).iter_rows(named=True)
    }
    assert cloud["Compute network per node"] == "8x Pollara 400 GbE RoCEv2"
    assert cloud["Fabric"] == "rail-optimized, 2-tier"


def test_damaged_descriptions(tmp_path):
    _write(tmp_path, "bad", "{not json")
    _write(tmp_path, "odd", {**CLOUD, "number_of_nodes": "-3", "accelerator_model_name": "Foo 9"})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        d = system_descriptions(tmp_path)
    assert [str(x.message) for x in w if issubclass(x.category, MLPerfLogWarning)][0].startswith(
        str(tmp_path / "X" / "systems" / "bad.json")
    )
    (odd,) = d.rows(named=True)
    assert odd["n_nodes"] is None and odd["accelerator"] is None  # never a made-up value
    assert "Compute nodes" not in cluster_items(odd)["item"].to_list()


def test_nvl72_domain_spans_trays_hgx_stays_on_one_board():
    gb = scaleup_domain("GB300", 4)
    assert (gb["gpus"], gb["nodes"], gb["spans_nodes"]) == (72, 18, True)  # 18 trays x 4
    assert scaleup_domain("H100 SXM", 8)["spans_nodes"] is False
    assert "one node" not in tp_domain_sentence("GB300", 4)
    assert "72 GPUs share one domain, 18 nodes of 4 GPUs" in tp_domain_sentence("GB300", 4)
    assert "all 8 GPUs (2 nodes of 4) sit in one 72-GPU domain" in tp_domain_sentence(
        "GB300", 4, total_gpus=8
    )
    # AMD's 8-GPU OAM platform is linked by Infinity Fabric (xGMI), not NVLink (accelerators.csv
    # scaleup_fabric, AMD's MI355X page); a TPU pod by ICI
    assert tp_domain_sentence("MI355X", 8).startswith(
        "TP stays inside the Infinity Fabric domain of one node"
    )
    assert "NVLink" not in tp_domain_sentence("MI300X", 8)
    assert tp_domain_sentence("TPU v5e", 4).startswith("TP can span nodes without leaving ICI:")
    assert "groups of 2 GPUs" in tp_domain_sentence("H100 PCIe", 8)
    with pytest.raises(ValueError):
        scaleup_domain("GB300", 0)


def test_a_gb300_config_gets_the_rack_sentence_and_its_systems_json(tmp_path):

    _write(tmp_path, "theia_ngpu8", THEIA)
    res = tmp_path / "X" / "results" / "theia_ngpu8" / "llama31_8b"
    res.mkdir(parents=True)
    (res / "result_0.txt").write_text(":::MLLOG {}\n")
    cfg = parse_config({"name": "R", "accelerator": "GB300", "gpus_per_node": 4, "nodes": 18,
                        "mlperf": str(tmp_path)}, tmp_path)  # fmt: skip
    sentence = config_values(cfg)["config"]["tp_domain"]
    # 18 trays x 4 GPUs = 72 = one NVL72 rack (Markdown-escaped for the prose)
    assert "all 72 GPUs" in sentence.replace("\\", "") and "one node" not in sentence
    assert report_overrides(cfg).overrides["cluster"]["mlperf_path"] == str(tmp_path)
    h100 = parse_config({"name": "H", "accelerator": "H100 SXM", "gpus_per_node": 8}, tmp_path)
    assert "inside the NVLink domain of one node" in config_values(h100)["config"]["tp_domain"]


def test_comparison_csv_carries_the_systems_json_and_a_folder_without_a_round(tmp_path, capsys):
    # a user's folder outside the MLCommons layout: no round in its path (null), still compared
    _write(tmp_path, "theia_ngpu8", THEIA)
    res = tmp_path / "X" / "results" / "theia_ngpu8" / "llama31_8b"
    res.mkdir(parents=True)
    for i in range(10):
        (res / f"result_{i}.txt").write_text(_log(["fp8: true"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = cluster_comparison("R", 4, "GB300", Path(__file__).parents[1] / "data" / "mlperf",
                               mlperf=tmp_path, warn=False)  # fmt: skip
    (r,) = f.rows(named=True)
    assert r["evaluated_round"] is None
    # 16 sequences / (0.4 s x 8 GPUs) x 8192 tokens x F_TOK; FP8 from the log; GB300 FP8 5000
    tflops = 5.0 * 8192 * F_TOK / 1e12
    assert r["evaluated_model_tflops_per_gpu"] == pytest.approx(tflops)
    assert r["evaluated_precision"] == "fp8" and r["evaluated_mfu"] == pytest.approx(tflops / 5000)
    assert r["evaluated_system_json"].endswith("theia_ngpu8.json")
    assert r["evaluated_host_processors"] == "2 x Neoverse-V2"
    assert r["evaluated_host_networking"] == "4x ConnectX-8 IB XDR 800 Gb/s"
    assert r["evaluated_scaleup_domain"] == 72
    # the command line names the benchmark as readers know it
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: R\naccelerator: GB300\ngpus_per_node: 4\nmlperf: {tmp_path / 'X'}\n")
    assert cli.main(["compare", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "Llama 3.1 8B" in out and "llama31_8b" not in out.split("\n\n")[0]
