"""The chapters name NVLink, NVSwitch and NCCL only for a GPU whose scale-up fabric is NVLink (trial
of 2026-12-07: an AMD MI355X book said "Inside a node they use NVLink and NVSwitch"). The fabric is
the accelerator table's ``scaleup_fabric`` (data/reference/accelerators.csv: "NVLink 4 ..." for
the H100 SXM, "Infinity Fabric (xGMI) ..." for the MI355X)."""

from __future__ import annotations

import pytest
from helpers import ROOT

from trainperf.config import load_config
from trainperf.config.plan import config_values
from trainperf.report.preview.pages import conditional_content


@pytest.mark.parametrize(("accelerator", "nvlink"), [("H100 SXM", True), ("GB300", True),
                                                      ("MI355X", False), ("MI325X", False)])  # fmt: skip
def test_the_chapters_name_the_fabric_of_the_configs_gpu(tmp_path, accelerator, nvlink):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: Lab\naccelerator: {accelerator}\ngpus_per_node: 8\n", encoding="utf-8")
    values = config_values(load_config(cfg))
    assert values["inputs"]["nvlink"] is nvlink
    text = conditional_content((ROOT / "chapters" / "workload.qmd").read_text(), {"values": values})
    assert ("Inside a node they use NVLink and NVSwitch" in text) is nvlink
    assert ("RCCL on AMD's" in text) is not nvlink
