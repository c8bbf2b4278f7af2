"""Damaged DCGM telemetry (issue 15): each case gives the right number, or the values are excluded with a
warning naming the file and line and a data-quality row. Expected values are worked out by hand below."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from pathlib import Path

import polars as pl
import pytest

from trainperf import dcgm, telemetry
from trainperf.quality import QUALITY_SCHEMA

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
UTC = dt.UTC
H100 = 'modelName="NVIDIA H100 80GB HBM3"'


def lab(gpu: int, host: str = "n1", **extra: str) -> str:
    parts = [
        f'gpu="{gpu}"',
        f'UUID="GPU-{host}-{gpu}"',
        f'device="nvidia{gpu}"',
        H100,
        f'Hostname="{host}"',
    ]
    parts += [f'{k}="{v}"' for k, v in extra.items()]
    return ",".join(parts)


def archive(tmp_path: Path, scrapes: list[list[str]], name: str = "a.prom") -> Path:
    lines = []
    for i, body in enumerate(scrapes):
        lines.append(str(T0 + 15 * i))
        lines += body
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def checks(r: dcgm.Reading) -> dict[str, dict]:
    assert r.quality.schema == pl.Schema(QUALITY_SCHEMA)
    return {row["check"]: row for row in r.quality.iter_rows(named=True)}


def phases(seconds: float) -> pl.DataFrame:
    s = dt.datetime.fromtimestamp(T0, tz=UTC)
    return pl.DataFrame(
        {"phase": ["train_01"], "kind": ["train"], "index": [1], "start": [s],
         "end": [s + dt.timedelta(seconds=seconds)], "duration_s": [float(seconds)]},
        schema=telemetry.PHASE_SCHEMA,
    )  # fmt: skip


# ---------------------------------------------------------------- two series for one GPU


def test_two_exporters_on_one_gpu_count_once(tmp_path):
    # Prometheus range query: GPU 0 scraped by two exporters (instance a and b), GPU 1 by one; the
    # step times coincide. Power: GPU 0 = 350 W in both series, GPU 1 = 600 W, at t0 and t0 + 15 s.
    def res(gpu, inst, w):
        m = {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": str(gpu), "UUID": f"GPU-{gpu}",
             "Hostname": "n1", "modelName": "NVIDIA H100 80GB HBM3", "instance": f"{inst}:9400"}  # fmt: skip
        return {"metric": m, "values": [[T0, str(w)], [T0 + 15, str(w)]]}

    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        res(0, "a", 350), res(0, "b", 350), res(1, "a", 600)]}}  # fmt: skip
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(dcgm.DcgmWarning, match="duplicate_series"):
        r = dcgm.read_prometheus_api_reading(p)
    f = r.frame()
    # before: (350 + 350 + 600) / 3 = 433.3 W pooled per time step; now one sample per GPU and time
    assert f.height == 4  # 2 GPUs x 2 times
    st = telemetry.phase_stats(f, phases(30), level="gpu", fields={"power": (155, "W")})
    assert st.sort("gpu")["mean"].to_list() == [350.0, 600.0]
    pooled = telemetry.phase_stats(f, phases(30), level="phase", fields={"power": (155, "W")})
    assert pooled["mean"].to_list() == [(350.0 + 600.0) / 2]  # 475 W, not 433.3 W
    q = checks(r)["duplicate_series"]
    assert (q["action"], q["n_samples"], q["n_series"], q["n_gpus"]) == ("excluded", 2, 1, 1)


def test_shared_gpu_jobs_merged_and_selectable(tmp_path):
    # one scrape: GPU 0 listed twice with hpc_job 11 and 12 (a shared GPU), GPU 1 with job 12
    p = archive(tmp_path, [[
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0, hpc_job='11')}}} 0.5",
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0, hpc_job='12')}}} 0.5",
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(1, hpc_job='12')}}} 0.3",
    ]])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match=r"a\.prom:3: .*duplicate_series"):
        f = dcgm.read_exposition(p)
    assert f.sort("gpu")["job_id"].to_list() == ["11,12", "12"]
    assert f.sort("gpu")["value"].to_list() == [0.5, 0.3]
    jobs = dict(telemetry.jobs_in(f).select("job_id", "n_gpus").iter_rows())
    assert jobs == {"11": 1, "12": 2}  # the shared GPU counts for both jobs
    assert telemetry.select_job(f, job_id="11").collect().height == 2  # its host


def test_unsynchronised_exporters_keep_the_longer_series(tmp_path):
    # exporter a scrapes GPU 0 at 0, 15, 30 s; exporter b (other instance) at 5, 20 s: they interleave
    rows = [(0, "a", 300), (5, "b", 301), (15, "a", 302), (20, "b", 303), (30, "a", 304)]
    lines = [
        f"DCGM_FI_DEV_POWER_USAGE{{{lab(0, instance=i)}}} {w} {(T0 + t) * 1000}" for t, i, w in rows
    ]
    p = tmp_path / "u.prom"
    p.write_text("\n".join(lines) + "\n")
    with pytest.warns(dcgm.DcgmWarning, match="duplicate_series"):
        f = dcgm.read_exposition(p)
    assert f["value"].to_list() == [300.0, 302.0, 304.0]  # exporter a: 3 samples > 2


# ---------------------------------------------------------------- out of range


def test_ratio_above_one_excluded_and_tflops_below_peak(tmp_path):
    # a MIG instance reports tensor activity 1.35 (line 4); the whole GPU 0.40 and 0.50
    p = archive(tmp_path, [
        [f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0)}}} 0.40",
         f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0, GPU_I_ID='1')}}} 1.35"],
        [f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0)}}} 0.50"],
    ])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match=r"a\.prom:3: .*1\.35.*out_of_range: excluded"):
        r = dcgm.read_exposition_reading(p)
    q = checks(r)["out_of_range"]
    assert (q["n_samples"], q["first_line"]) == (1, 3)
    f = r.frame()
    assert sorted(f["value"].to_list()) == [0.40, 0.50]
    a = telemetry.achieved_tflops(f, phases(30), "H100 SXM").filter(pl.col("precision") == "fp8")
    # mean (0.40 + 0.50) / 2 = 0.45; x 1978.9 (dense FP8 peak) = 890.505 TFLOP/s
    assert a["achieved_tflops"][0] == pytest.approx(0.45 * 1978.9)


def test_achieved_tflops_guards_hand_made_frames():
    # a frame not from a reader with tensor activity 1.35 (would give 1.35 x 1978.9 = 2,671.5 TFLOP/s)
    s = dt.datetime.fromtimestamp(T0, tz=UTC)
    rows = [{"timestamp": s + dt.timedelta(seconds=t), "hostname": "n1", "gpu": 0, "uuid": "u",
             "entity": "GPU", "entity_id": 0, "field_id": 1004,
             "field": "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "value": v, "job_id": None, "labels": "{}"}
            for t, v in [(0, 1.35), (10, 0.45)]]  # fmt: skip
    f = pl.DataFrame(rows, schema=dcgm.SCHEMA)
    with pytest.warns(dcgm.DcgmWarning, match="outside 0..1"):
        a = telemetry.achieved_tflops(f, phases(30), "H100 SXM")
    fp8 = a.filter(pl.col("precision") == "fp8")["achieved_tflops"][0]
    assert fp8 == pytest.approx(0.45 * 1978.9) and fp8 <= 1978.9


def test_power_above_the_board_limit_excluded(tmp_path):
    # H100 SXM: 700 W board limit x 1.2 = 840 W; 1500 W is not a power reading
    p = archive(tmp_path, [[f"DCGM_FI_DEV_POWER_USAGE{{{lab(0)}}} 690.5"],
                           [f"DCGM_FI_DEV_POWER_USAGE{{{lab(0)}}} 1500"]])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match="out_of_range"):
        f = dcgm.read_exposition(p)
    assert f["value"].to_list() == [690.5]


def test_percent_above_100_excluded(tmp_path):
    p = archive(tmp_path, [[f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 100"],
                           [f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 255"]])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match=r"a\.prom:4: "):
        f = dcgm.read_exposition(p)
    assert f["value"].to_list() == [100.0]


# ---------------------------------------------------------------- frozen profiling fields


def frozen_archive(tmp_path: Path, util: float) -> Path:
    tensor = [0.40, 0.42] + [0.5] * 6  # scrapes 3..8 frozen at 0.5
    gr = [0.90, 0.91] + [0.8] * 6
    return archive(tmp_path, [[
        f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} {util:g}",
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{lab(0)}}} {g}",
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0)}}} {t}",
    ] for t, g in zip(tensor, gr, strict=True)])  # fmt: skip


def test_frozen_profiling_fields_while_busy_excluded(tmp_path):
    p = frozen_archive(tmp_path, util=100)
    with pytest.warns(dcgm.DcgmWarning, match="frozen: excluded"):
        r = dcgm.read_exposition_reading(p)
    f = r.frame()
    t = f.filter(pl.col("field_id") == 1004)["value"].to_list()
    assert t == [0.40, 0.42]  # mean 0.41, not (0.40 + 0.42 + 6 x 0.5) / 8 = 0.4775
    q = checks(r)["frozen"]
    # 6 frozen scrapes x 2 profiling fields = 12 samples; a scrape is 4 lines (marker + 3 samples),
    # so scrape 3 is lines 9-12: marker 9, GPU_UTIL 10, GR_ENGINE 11 (the first frozen sample)
    assert (q["n_samples"], q["n_series"], q["n_gpus"], q["first_line"]) == (12, 2, 1, 11)
    assert f.filter(pl.col("field_id") == 203).height == 8  # GPU_UTIL itself is kept


def test_frozen_run_found_in_time_order_when_the_file_is_not(tmp_path):
    # 10 scrapes written even times first (0, 2, 4, 6, 8), then odd (1, 3, 5, 7, 9), GPU busy
    # (util 100). The two profiling fields froze at times 3..7 (5 scrapes, FROZEN_MIN_SAMPLES):
    # in file order they fall apart (4, 6 | 3, 5, 7), in time order they are one run of 5: frozen.
    # Live values move at every time (0.40 + 0.01 * i). File order of the times: 0 2 4 6 8 1 3 5 7 9;
    # time 4 is the third scrape of the file: lines 9-12, GR_ENGINE at line 11 comes first.
    tensor = [0.5 if 3 <= i <= 7 else 0.40 + 0.01 * i for i in range(10)]
    gr = [0.8 if 3 <= i <= 7 else 0.90 + 0.001 * i for i in range(10)]
    lines = []
    for i in [0, 2, 4, 6, 8, 1, 3, 5, 7, 9]:
        lines += [str(T0 + 15 * i), f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 100",
                  f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{lab(0)}}} {gr[i]:g}",
                  f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0)}}} {tensor[i]:g}"]  # fmt: skip
    p = tmp_path / "shuffled.prom"
    p.write_text("\n".join(lines) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dcgm.read_exposition_reading(p)
    q = checks(r)["frozen"]
    # 5 frozen times x 2 profiling fields = 10 samples
    assert (q["n_samples"], q["n_series"], q["first_line"]) == (10, 2, 11)
    kept = r.frame().filter(pl.col("field_id") == 1004)["value"].to_list()
    assert sorted(kept) == [0.40, 0.41, 0.42, 0.48, 0.49]


def test_constant_profiling_fields_of_an_idle_gpu_kept(tmp_path):
    p = frozen_archive(tmp_path, util=0)  # idle: constant ratios are plausible
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = dcgm.read_exposition(p)
    assert f.filter(pl.col("field_id") == 1004).height == 8


# ---------------------------------------------------------------- gpu label vs device minor


def test_gpu_label_and_device_minor_disagree(tmp_path):
    # DCGM index 0 is /dev/nvidia1 and index 1 is /dev/nvidia0. The exporter put job A (mapping file "0",
    # written by Slurm's prolog for Slurm GPU 0 = minor 0) on gpu="0"; minor 0 is gpu="1".
    def l2(gpu, minor, job):
        return (f'gpu="{gpu}",UUID="GPU-{gpu}",device="nvidia{minor}",{H100},Hostname="n1",'
                f'hpc_job="{job}"')  # fmt: skip

    p = archive(tmp_path, [[f"DCGM_FI_DEV_GPU_UTIL{{{l2(0, 1, 'A')}}} 10",
                            f"DCGM_FI_DEV_GPU_UTIL{{{l2(1, 0, 'B')}}} 90"]])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match=r"a\.prom:2: .*label_mismatch: corrected"):
        r = dcgm.read_exposition_reading(p)
    f = r.frame().sort("gpu")
    assert f["job_id"].to_list() == ["B", "A"]  # job of minor 0 (A) is on gpu 1
    assert [json.loads(x)["exporter_job_id"] for x in f["labels"]] == ["A", "B"]
    assert checks(r)["label_mismatch"]["n_gpus"] == 2


# ---------------------------------------------------------------- entities


def test_nvswitch_series_are_not_gpus(tmp_path):
    p = archive(tmp_path, [[
        'DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="3",Hostname="n1"} 45',
        f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 90",
    ]])  # fmt: skip
    f = dcgm.read_exposition(p)
    sw = f.filter(pl.col("entity") == "NVSwitch").row(0, named=True)
    assert (sw["gpu"], sw["entity_id"]) == (None, 3)
    notes = telemetry.quality_notes(f, "a.prom")
    assert notes["check"].to_list() == ["nvswitch"] and notes["n_samples"].to_list() == [1]


@pytest.mark.filterwarnings(
    "ignore:.*samples of MIG instances.*:trainperf.dcgm.fields.DcgmWarning"
)  # the MIG rows it tests
def test_mig_rows_left_out_of_gpu_stats_with_a_note(tmp_path):
    p = archive(tmp_path, [[
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0)}}} 0.4",
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0, GPU_I_ID='1')}}} 0.9",
        f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{lab(0, GPU_I_ID='2')}}} 0.7",
    ]])  # fmt: skip
    f = dcgm.read_exposition(p)
    st = telemetry.phase_stats(f, phases(10), level="phase", fields={"t": (1004, "ratio")})
    assert st["mean"].to_list() == [0.4] and st["n"].to_list() == [1]  # whole GPU only
    n = telemetry.quality_notes(f).row(0, named=True)
    assert (n["check"], n["action"], n["n_series"], n["n_samples"]) == (
        "mig_instance",
        "flagged",
        2,
        2,
    )


# ---------------------------------------------------------------- failed scrapes, truncation, isolation

HTTP_500 = [
    "An error has occurred while serving metrics:",
    "",
    'collected metric "DCGM_FI_DEV_GPU_UTIL" { label:<name:"gpu" value:"0" > gauge:<value:5 > } '
    "was collected before with the same name and label values",
]


def test_failed_scrape_inside_an_archive_costs_only_itself(tmp_path):
    p = archive(tmp_path, [
        [f"DCGM_FI_DEV_GPU_UTIL{{{lab(g)}}} {10 + g}" for g in range(2)],
        HTTP_500,
        [f"DCGM_FI_DEV_GPU_UTIL{{{lab(g)}}} {20 + g}" for g in range(2)],
    ])  # fmt: skip
    # lines: 1 marker, 2-3 samples, 4 marker, 5-7 error text, 8 marker, 9-10 samples
    with pytest.warns(dcgm.DcgmWarning, match=r"a\.prom:5: .*failed_scrape: excluded"):
        r = dcgm.read_exposition_reading(p)
    f = r.frame()
    assert f["value"].to_list() == [10.0, 11.0, 20.0, 21.0]
    q = checks(r)["failed_scrape"]
    assert (q["first_line"], q["n_lines"]) == (5, 4)  # lines 4..7: the marker and its 3 lines


def test_archive_of_only_failed_scrapes_is_an_error(tmp_path):
    p = archive(tmp_path, [HTTP_500, HTTP_500])
    with pytest.raises(dcgm.DcgmFormatError, match=r"a\.prom:2: "):
        dcgm.read_exposition(p)


def test_cut_off_last_line_excluded(tmp_path):
    p = tmp_path / "cut.prom"
    p.write_text(f'{T0}\nDCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 42\nDCGM_FI_DEV_GPU_UTIL{{gpu="1",UU')
    with pytest.warns(dcgm.DcgmWarning, match=r"cut\.prom:3: .*truncated_line"):
        f = dcgm.read_exposition(p)
    assert f["value"].to_list() == [42.0]


def test_load_isolates_a_damaged_file(tmp_path):
    good1 = archive(tmp_path, [[f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 50"]], "a1.prom")
    bad = tmp_path / "b.prom"
    bad.write_text(f"{T0}\nDCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 5\n!!garbage\n")
    good2 = archive(tmp_path, [[f"DCGM_FI_DEV_GPU_UTIL{{{lab(1)}}} 70"]], "c1.prom")
    with pytest.warns(dcgm.DcgmWarning, match=r"b\.prom:3: .*parse_error"):
        r = dcgm.load([good1, bad, good2])
    assert sorted(r.frame()["value"].to_list()) == [50.0, 70.0]
    pe = r.quality.filter(pl.col("check") == "parse_error").row(0, named=True)
    assert (
        pe["source"] == str(bad) and pe["first_line"] == 3 and "expected a sample" in pe["detail"]
    )
    # a folder works the same way
    with pytest.warns(dcgm.DcgmWarning, match="parse_error"):
        assert dcgm.load(tmp_path).frame().height == 2


def test_failed_query_among_several_api_responses(tmp_path):
    ok = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1"},
         "value": [T0, "97"]}]}}  # fmt: skip
    err = {"status": "error", "errorType": "timeout", "error": "query timed out"}
    with pytest.warns(dcgm.DcgmWarning, match="failed_query"):
        r = dcgm.read_prometheus_api_reading([ok, err])
    assert r.frame()["value"].to_list() == [97.0]
    assert checks(r)["failed_query"]["action"] == "excluded"


def test_ingest_records_quality_in_the_store(tmp_path):
    p = archive(tmp_path, [[f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 10"], HTTP_500,
                           [f"DCGM_FI_DEV_GPU_UTIL{{{lab(0)}}} 20"]])  # fmt: skip
    with pytest.warns(dcgm.DcgmWarning, match="failed_scrape"):
        stats = dcgm.ingest_exposition(p, tmp_path / "store")
    assert stats["rows"] == 2
    q = dcgm.store_quality(tmp_path / "store")
    assert q["check"].to_list() == ["failed_scrape"] and q["first_line"].to_list() == [4]
    assert dcgm.scan_parquet(tmp_path / "store").collect().height == 2


def test_api_timestamp_beyond_datetime_range_is_a_format_error():
    # found by tests/fuzz/fuzz_dcgm.py: 9.2e17 s is 9.2e23 us, beyond Int64 microseconds
    doc = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0"}, "value": [9.2e17, "1"]}]}}  # fmt: skip
    with pytest.raises(dcgm.DcgmFormatError, match=r"values\[0\]"):
        dcgm.read_prometheus_api(doc)
