"""The examples of an accelerator described in the config (`trainperf init`'s template, README)."""

import re
from pathlib import Path

import polars as pl
import yaml

from trainperf.config import parse_config
from trainperf.config.template import TEMPLATE

ROOT = Path(__file__).parents[1]


def test_the_examples_of_a_described_accelerator_are_one_the_table_lacks(tmp_path):
    # `trainperf init`'s template and README show how to describe an accelerator outside
    # data/reference/accelerators.csv: the example must be one (MI325X, then MI355X joined the table)

    table = pl.read_csv(ROOT / "data" / "reference" / "accelerators.csv")
    names = set(table["accelerator"]) | {
        a for al in table["aliases"].drop_nulls() for a in al.split(";")
    }
    for text in (TEMPLATE, (ROOT / "README.md").read_text()):
        m = re.search(r"# accelerator: (\{name:.*?\n#\s+.*?\})", text)
        assert m, "no example of a described accelerator"
        acc = yaml.safe_load(re.sub(r"\n#\s+", " ", m.group(1)))
        assert acc["name"] not in names and acc["source"].startswith("https://")
        # Gaudi 3, Intel's white paper: 128 GB HBM2e; MME 1,835 TFLOP/s in BF16 and in FP8
        assert (acc["memory_gb"], acc["bf16_dense_tflops"], acc["fp8_dense_tflops"]) == (
            128, 1835, 1835
        )  # fmt: skip
        cfg = parse_config({"name": "X", "accelerator": acc, "gpus_per_node": 8}, tmp_path)
        assert cfg.accelerator == acc["name"] and cfg.gpu_memory_gb == 128
