"""The book's words for a set of MLPerf scores and the cluster table from a systems JSON
(``trainperf.mlperf.summary``, ``trainperf.mlperf.systems``), on the bundled Oracle v4.1 GPT-3
results folder and hand-made damage."""

from __future__ import annotations

import shutil
import warnings

import polars as pl
from helpers import MLPERF

from trainperf import mlperf


def test_the_scores_sentence_names_the_submitter_system_round_and_minutes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = mlperf.load_results(MLPERF / "v4.1" / "Oracle")
    # MLCommons's v4.1 results table: Oracle 1536xBM.GPU.H100.8, GPT-3, 19.690 minutes (the
    # olympic mean of its three runs), 1,536 H100 GPUs
    sentence = mlperf.scores_sentence(results.scores).replace("\\", "")
    assert sentence == (
        "GPT-3 175B trained in 19.69 minutes on 1,536 GPUs "
        "(Oracle 1536xBM.GPU.H100.8, MLPerf v4.1, 3 of 3 runs converged)."
    )
    labels = results.scores.with_columns(mlperf.system_label())["system_label"].to_list()
    assert labels == ["Oracle 1536xBM.GPU.H100.8"]
    # a system without a score says so; no score at all is one sentence
    no_score = results.scores.with_columns(pl.lit(None, pl.Float64).alias("score_min"))
    assert "has no score" in mlperf.scores_sentence(no_score)
    assert mlperf.scores_sentence(results.scores.clear()).startswith("No MLPerf score")


def test_the_cluster_table_reads_the_systems_json_beside_the_logs(tmp_path):
    logs = tmp_path / "v4.1" / "Oracle"
    shutil.copytree(MLPERF / "v4.1" / "Oracle", logs)
    rows = mlperf.system_table_rows(tmp_path)
    got = dict(zip(rows["item"], rows["value"], strict=True))
    # data/mlperf/v4.1/Oracle/systems/1536xBM.GPU.H100.8.json, field by field
    assert got == {
        "Compute nodes": "192",
        "GPUs per node": "8 x NVIDIA H100-SXM5-80GB",
        "Intra-node GPU link": "NVLINK Gen4 900 GB/s + NVSWITCH Gen3",
        "CPUs per node": "2 x Intel(R) Xeon(R) Platinum 8480+",
        "Host memory per node": "2.0 TB",
        "Compute network per node": "ROCE2; Data bandwidth for GPU-PCIe: 504 GB/s; PCIe-NIC: 500 GB/s",
        "Fabric": "Ethernet/RDMA ROCE2 on switching network",
        "Storage": "NVMe SSD, 16x 3.84TB NVMe",
        "Software": "MXNet NVIDIA Release 24.04 or PyTorch NVIDIA Release 24.04",  # framework
    }
    assert set(rows["system_label"]) == {"Oracle 1536xBM.GPU.H100.8"}
    assert rows["source"][0] == "Oracle/systems/1536xBM.GPU.H100.8.json (number_of_nodes)"
    # a damaged JSON: no rows, one warning naming the file; no path: no rows, nothing read
    (logs / "systems" / "1536xBM.GPU.H100.8.json").write_text("{not json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert mlperf.system_table_rows(tmp_path).is_empty()
    assert any("1536xBM.GPU.H100.8.json" in str(w.message) for w in caught)
    assert mlperf.system_table_rows("").is_empty()
