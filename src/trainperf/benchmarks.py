"""The MLPerf Training benchmarks by the names readers know (one table for the book, the charts,
the comparison and the memory model; a leaf module, importing nothing of trainperf)."""

from __future__ import annotations

__all__ = ["BENCHMARK_NAMES", "benchmark_name"]

#: MLPerf Training benchmark ids (as in the logs' ``submission_benchmark`` and mlperf-logging's
#: ``benchmark_meta``) and the names readers know: the names of the MLPerf Training results tables
#: (mlcommons.org/benchmarks/training), which agree with mlcommons/logging's result summarizer
#: columns (``result_summarizer/config.yaml``: "Llama31-8b", "Flux1", "DeepSeekV3-671B"...) up to
#: spelling; ``tests/test_benchmarks.py`` checks every id of every training ruleset 3.1.0-6.1.0.
#: Ids renamed between rounds keep their name: ``ssd`` and ``retinanet`` are RetinaNet, ``gnn``
#: and ``rgat`` are R-GAT.
BENCHMARK_NAMES: dict[str, str] = {
    # LLM pre-training, fine-tuning and post-training
    "gpt3": "GPT-3 175B",
    "llama31_405b": "Llama 3.1 405B",
    "llama31_8b": "Llama 3.1 8B",
    "deepseekv3_671b": "DeepSeek-V3 671B",
    "gpt_oss_20b": "GPT-OSS-20B",
    "llama2_70b_lora": "Llama 2 70B LoRA",
    "qwen35_397b_grpo": "Qwen3.5-397B-A17B GRPO",
    # text to image
    "flux1": "Flux.1",
    "stable_diffusion": "Stable Diffusion v2",
    # the others
    "bert": "BERT-Large",
    "resnet": "ResNet-50",
    "dlrm_dcnv2": "DLRM-dcnv2",
    "dlrmv4": "DLRMv4",  # 6.1.0 (mlperf-logging 4.1.68); no summarizer column yet
    "dlrm": "DLRM",
    "rnnt": "RNN-T",
    "maskrcnn": "Mask R-CNN",
    "ssd": "RetinaNet",
    "retinanet": "RetinaNet",
    "unet3d": "3D U-Net",
    "gnn": "R-GAT",
    "rgat": "R-GAT",
    "minigo": "MiniGo",
    "gnmt": "GNMT",
    "transformer": "Transformer",
    "ncf": "NCF",
}


def benchmark_name(benchmark: str) -> str:
    """The readable name of an MLPerf benchmark id (``gpt3`` -> ``GPT-3 175B``); unknown ids as given."""
    return BENCHMARK_NAMES.get(benchmark, benchmark)
