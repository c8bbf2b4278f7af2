"""Accelerator names as real MLPerf systems descriptions spell them (fresh-user trial, issue 24).

The names are the ``accelerator_model_name`` of ``systems/*.json`` in
github.com/mlcommons/training_results_v5.0 and _v5.1 (e.g. IBM+CoreWeave+NVIDIA
``carina_ngpu1024_ngc25.04_nemo.json``: "NVIDIA Blackwell GPU (GB200)"; 54 v5.x systems name
"NVIDIA Blackwell GPU (B200-SXM-180GB)"). Expected peaks are the vendors' datasheet figures
(dense = half the "with sparsity" figures), not the table under test.
"""

from __future__ import annotations

import pytest

from trainperf.flops import peak_flops, resolve_accelerator


@pytest.mark.parametrize(
    ("name", "canonical", "bf16_tflops", "fp8_tflops"),
    [
        # https://www.nvidia.com/en-us/data-center/dgx-b200/ and the Blackwell datasheet: B200
        # 4.5 PFLOPS FP8 dense, 2.25 PFLOPS BF16 dense
        ("NVIDIA Blackwell GPU (B200-SXM-180GB)", "B200", 2250, 4500),
        # https://www.nvidia.com/en-us/data-center/dgx-gb200/: GB200 5 PFLOPS FP8 dense per GPU
        ("NVIDIA Blackwell GPU (GB200)", "GB200", 2500, 5000),
        # https://www.nvidia.com/en-us/data-center/h200/, H200 NVL column: BF16 1,671 and FP8
        # 3,341 TFLOPS with sparsity -> 835.5 and 1,670.5 dense
        ("NVIDIA H200-NVL-141GB", "H200 NVL", 835.5, 1670.5),
        ("NVIDIA H200 NVL 141GB", "H200 NVL", 835.5, 1670.5),
        # https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html: peak dense
        # FP16/BF16 1,307.4 TFLOPS, FP8 2,614.9 TFLOPS
        ("AMD Instinct MI325X 256GB HBM3E", "MI325X", 1307.4, 2614.9),
        ("AMD Instinct MI325X 256GB HBM3E DLC", "MI325X", 1307.4, 2614.9),
        # H100 NVL as Dell's v5.x systems spell it; https://www.nvidia.com/en-us/data-center/h100/
        ("H100 NVL Tensor Core GPU (PCIe)", "H100 NVL", 835, 1671),
    ],
)
def test_systems_json_names_resolve(name, canonical, bf16_tflops, fp8_tflops):
    assert resolve_accelerator(name) == canonical
    assert peak_flops(name, "bf16") == pytest.approx(bf16_tflops * 1e12)
    assert peak_flops(name, "fp8") == pytest.approx(fp8_tflops * 1e12)


def test_h200_nvl_is_not_the_sxm_part():
    # the NVL part (600 W, PCIe) has lower peaks than the SXM one (989.4 TFLOPS BF16 dense)
    assert resolve_accelerator("NVIDIA H200-SXM5-141GB") == "H200"
    assert peak_flops("NVIDIA H200-NVL-141GB", "bf16") < peak_flops("H200", "bf16")
