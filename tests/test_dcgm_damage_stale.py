"""Per-field staleness of DCGM telemetry (issue 26): one field frozen bit for bit while the rest of
its GPU is live is excluded from that field's statistics, with a warning naming the file and line
and a ``stale_field`` quality row; fields that legitimately stay constant (clocks, frame buffer,
temperatures, error counters, utilisation pinned at 0 or 100 %) are never flagged. Every expected
value is worked out by hand in the test."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from helpers import quality_by_check, read_exposition_warned

from trainperf import dcgm
from trainperf.dcgm import checks as dcgm_checks
from trainperf.tables import read_table

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z in epoch seconds (scrape markers)
MODEL = 'modelName="NVIDIA H100 80GB HBM3"'


def sample(field: str, value: float, uuid: str = "GPU-a", gpu: int = 0) -> str:
    return f'{field}{{gpu="{gpu}",UUID="{uuid}",{MODEL},Hostname="n1"}} {value}'


def archive(tmp_path: Path, name: str, columns: dict[str, list]) -> Path:
    """Scrapes 15 s apart: line ``1 + k*(1+len(columns))`` is scrape k's marker, then one line per
    field in the order of ``columns``."""
    n = len(next(iter(columns.values())))
    lines = []
    for i in range(n):
        lines.append(str(T0 + 15 * i))
        lines += [sample(f, vals[i]) for f, vals in columns.items()]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


read, checks = read_exposition_warned, quality_by_check


def values(r: dcgm.Reading, field: str) -> list[float]:
    return r.frame().filter(pl.col("field") == field)["value"].to_list()


# live board power, 24 scrapes: consecutive values always differ (i % 7 changes every scrape)
POWER = [600.0 + 1.5 * (i % 7) + 0.25 * i for i in range(24)]
# live graphics-engine activity: consecutive values differ (i % 5 changes every scrape)
GR = [0.70 + 0.01 * (i % 5) for i in range(24)]


def test_utilisation_and_tensor_activity_frozen_while_power_moves(tmp_path):
    # 24 scrapes. Power and GR_ENGINE_ACTIVE stay live all along. From scrape 4 the exporter stopped
    # updating two fields: GPU_UTIL froze at 60 % and PIPE_TENSOR_ACTIVE at 0.9 for 20 scrapes.
    #   util:   live 95, 96, 98, 99 -> mean 97 %;  with the frozen ones (388 + 20*60)/24 = 66.17 %
    #   tensor: live 0.61, 0.63, 0.60, 0.62 -> 0.615; with them (2.46 + 20*0.9)/24 = 0.8525
    # The profiling fields are not all frozen (GR moves), so check `frozen` does not apply, and
    # power moves, so check `stale` does not either: only the per-field rule finds them.
    util = [95, 96, 98, 99] + [60] * 20
    tensor = [0.61, 0.63, 0.60, 0.62] + [0.9] * 20
    p = archive(tmp_path, "fields.prom", {
        "DCGM_FI_DEV_POWER_USAGE": POWER, "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": tensor, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": GR,
    })  # fmt: skip
    r, msgs = read(p)
    assert values(r, "DCGM_FI_DEV_GPU_UTIL") == [95, 96, 98, 99]
    assert sum(values(r, "DCGM_FI_DEV_GPU_UTIL")) / 4 == 97
    assert sum(values(r, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")) / 4 == pytest.approx(0.615)
    assert values(r, "DCGM_FI_DEV_POWER_USAGE") == POWER  # the live fields are all kept
    assert len(values(r, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")) == 24
    q = checks(r)
    assert "stale" not in q and "frozen" not in q
    row = q["stale_field"]
    # 20 + 20 samples of 2 series of 1 GPU; a scrape is 5 lines (marker, power, util, tensor, GR),
    # scrape 4 is lines 21-25, so the first frozen sample is util at line 23
    assert (row["n_samples"], row["n_series"], row["n_gpus"], row["first_line"]) == (40, 2, 1, 23)
    assert row["action"] == "excluded"
    assert "DCGM_FI_DEV_GPU_UTIL = 60 from line 23 for 20 samples" in row["detail"]
    assert any("fields.prom:23" in m and "stale_field" in m for m in msgs)
    # coverage reported honestly: 4 of 24 scrapes for the two frozen fields, 24 of 24 for the others
    cov = dcgm.coverage(r.frame(), 15, start=T0, end=T0 + 15 * 23)
    got = dict(zip(cov["field"], cov["coverage"], strict=True))
    assert got["DCGM_FI_DEV_GPU_UTIL"] == pytest.approx(4 / 24)
    assert got["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == pytest.approx(4 / 24)
    assert got["DCGM_FI_DEV_POWER_USAGE"] == pytest.approx(1.0)


def test_constant_clocks_memory_temperature_counters_not_flagged(tmp_path):
    # a busy training GPU: power moves, util pinned at 100 % (a bound of the range), FP64 pipe at 0
    # (a bound: BF16 training uses no FP64), SM clock locked at 1980 MHz, memory clock 2619 MHz,
    # FB used 71234 MiB (caching allocator), temperature 65 C, ECC and XID 0: all constant for 24
    # scrapes and all legitimate, so nothing is excluded: 9 fields x 24 = 216 samples kept.
    # (GR_ENGINE_ACTIVE, on in dcgm-exporter's default counters, moves: the profiling module works)
    cols = {
        "DCGM_FI_DEV_POWER_USAGE": POWER, "DCGM_FI_DEV_GPU_UTIL": [100] * 24,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": GR,
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE": [0] * 24, "DCGM_FI_DEV_SM_CLOCK": [1980] * 24,
        "DCGM_FI_DEV_MEM_CLOCK": [2619] * 24, "DCGM_FI_DEV_FB_USED": [71234] * 24,
        "DCGM_FI_DEV_GPU_TEMP": [65] * 24, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": [0] * 24,
    }  # fmt: skip
    p = archive(tmp_path, "busy.prom", cols)
    r, msgs = read(p)
    assert r.samples.height == 9 * 24
    assert "stale_field" not in checks(r) and "stale" not in checks(r)
    assert not [m for m in msgs if "stale" in m]


def test_integer_power_of_idle_gpu_with_moving_temperature_not_flagged(tmp_path):
    # an idle GPU (util 0 %) printing whole watts: 70 W for 12 scrapes while the temperature drifts
    # 30..35 C. Temperature is a may_hold field, so it is no evidence that the exporter updates
    # power; util at 0 is a bound. Nothing is flagged: 3 x 12 = 36 samples kept
    p = archive(tmp_path, "idle.prom", {
        "DCGM_FI_DEV_POWER_USAGE": [70] * 12, "DCGM_FI_DEV_GPU_UTIL": [0] * 12,
        "DCGM_FI_DEV_GPU_TEMP": [30 + i % 6 for i in range(12)],
    })  # fmt: skip
    r, _ = read(p)
    assert r.samples.height == 36 and "stale_field" not in checks(r)


def test_idle_activity_level_repeating_while_power_moves_not_flagged(tmp_path):
    # the shape of the bundled real H200 capture at idle: util 0 %, power drifting (a float), and
    # GR_ENGINE_ACTIVE / DRAM_ACTIVE at a quantised idle level (0.000063) for 18 samples. An activity
    # ratio counts as stale only while the GPU is busy by another field, so nothing is flagged:
    # 4 x 18 = 72 samples kept
    p = archive(tmp_path, "idle_gpm.prom", {
        "DCGM_FI_DEV_POWER_USAGE": [74.0 + 0.013 * (i % 4) for i in range(18)],
        "DCGM_FI_DEV_GPU_UTIL": [0] * 18, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": [0.000063] * 18,
        "DCGM_FI_PROF_DRAM_ACTIVE": [0.000063] * 18,
    })  # fmt: skip
    r, _ = read(p)
    assert r.samples.height == 72 and "stale_field" not in checks(r)


def test_bundled_real_capture_has_no_stale_field():
    # the real H200 capture (data/telemetry, SOURCES.md): idle and busy phases of a GPT smoke run;
    # the exporter was live throughout, so no field may be flagged stale
    path = Path(__file__).resolve().parents[1] / "data/telemetry/h200_1gpu_1.3b_20261129T1852Z"
    r, msgs = read(path / "telemetry.prom")
    assert "stale_field" not in checks(r), checks(r).get("stale_field")


def test_runs_shorter_than_the_field_rule_are_kept(tmp_path):
    # util repeats 87 % for 9 scrapes (< min_run 10 of an integer percent) and tensor 0.55 for 4
    # (< min_run 5 of a ratio) while power moves: plausible repeats, all 3 x 14 = 42 samples kept
    util = [90, 91] + [87] * 9 + [88, 89, 90]
    tensor = [0.5, 0.52] + [0.55] * 4 + [0.5 + 0.01 * i for i in range(8)]
    p = archive(tmp_path, "short.prom", {
        "DCGM_FI_DEV_POWER_USAGE": POWER[:14], "DCGM_FI_DEV_GPU_UTIL": util,
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": tensor,
    })  # fmt: skip
    r, _ = read(p)
    assert r.samples.height == 42 and "stale_field" not in checks(r)
    # ...while 10 scrapes at 87 % with GR_ENGINE_ACTIVE busy (>= 0.5) and moving are a stale run:
    # 10 samples excluded, 14 - 10 = 4 util kept
    util10 = [90, 91] + [87] * 10 + [88, 89]
    p = archive(tmp_path, "ten.prom", {
        "DCGM_FI_DEV_POWER_USAGE": POWER[:14], "DCGM_FI_DEV_GPU_UTIL": util10,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": GR[:14],
    })  # fmt: skip
    r, _ = read(p)
    assert values(r, "DCGM_FI_DEV_GPU_UTIL") == [90, 91, 88, 89]
    assert checks(r)["stale_field"]["n_samples"] == 10


def test_energy_counter_frozen_while_power_moves(tmp_path):
    # the energy counter (mJ) grows 9e6 mJ per 15-s scrape at 600 W for scrapes 0-3, then repeats
    # 1.036e9 for 8 scrapes while power still moves: a counter that must grow, frozen -> the 8
    # samples of the run are excluded, the 4 live ones kept
    energy = [1_000_000_000 + 9_000_000 * i for i in range(4)] + [1_036_000_000] * 8
    p = archive(tmp_path, "energy.prom", {
        "DCGM_FI_DEV_POWER_USAGE": POWER[:12], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": energy,
    })  # fmt: skip
    r, msgs = read(p)
    assert values(r, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == energy[:4]
    q = checks(r)["stale_field"]
    # scrape 4 is lines 13-15 (marker, power, energy): the first frozen sample is line 15
    assert q["n_samples"] == 8 and q["first_line"] == 15
    assert any("energy.prom:15" in m for m in msgs)


def test_a_frozen_field_with_nothing_else_moving_is_not_flagged_per_field(tmp_path):
    # one field alone: util 60 % for 12 scrapes and nothing else of the GPU exported. Nothing shows
    # the GPU live (util is no evidence for itself), so the constant cannot be told from a real one
    p = archive(tmp_path, "alone.prom", {"DCGM_FI_DEV_GPU_UTIL": [60] * 12})
    r, _ = read(p)
    assert r.samples.height == 12 and "stale_field" not in checks(r)


def test_every_field_has_a_staleness_rule_with_a_reason():
    fields = read_table("dcgm_fields")
    rules = dcgm_checks.staleness_table()
    assert sorted(rules["field_id"].to_list()) == sorted(fields["field_id"].to_list())
    by_id = {r["field_id"]: r for r in rules.iter_rows(named=True)}
    for r in by_id.values():
        assert r["rule"] in dcgm_checks.STALE_RULES and r["why"]
        assert (r["min_run"] is None) == (r["rule"] == "may_hold")
    # the fields the issue names as legitimately constant are never checked
    for fid in (100, 101, 251, 252, 253, 310, 311, 312, 313, 150, 230):
        assert by_id[fid]["rule"] == "may_hold", fid
    assert by_id[156]["rule"] == "increases"
    assert by_id[1004]["rule"] == by_id[203]["rule"] == "active"
    assert by_id[155]["rule"] == "varies"


def test_stale_run_found_in_time_order_when_the_file_is_not(tmp_path):
    # The scrapes are written out of time order: the even times 0, 2, ..., 22 first, then the odd
    # ones 1, 3, ..., 23. GPU_UTIL (min_run 10) froze at 61 % for the ten times 4..13 and moves
    # otherwise (90 + i % 3 never repeats at consecutive times). In file order the frozen values
    # fall into two runs of five (times 4, 6, 8, 10, 12 and 5, 7, 9, 11, 13), in time order they are
    # one run of ten: stale. A scrape is 5 lines (marker, power, util, tensor, GR); time 4 is the
    # third scrape of the file (lines 11-15), so the first frozen sample in the file is line 13.
    util = [61 if 4 <= i <= 13 else 90 + i % 3 for i in range(24)]
    tensor = [0.61 + 0.01 * (i % 3) for i in range(24)]
    lines = []
    for i in list(range(0, 24, 2)) + list(range(1, 24, 2)):
        lines.append(str(T0 + 15 * i))
        lines += [sample("DCGM_FI_DEV_POWER_USAGE", POWER[i]),
                  sample("DCGM_FI_DEV_GPU_UTIL", util[i]),
                  sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", tensor[i]),
                  sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", GR[i])]  # fmt: skip
    p = tmp_path / "shuffled.prom"
    p.write_text("\n".join(lines) + "\n")
    r, _ = read(p)
    row = checks(r)["stale_field"]
    assert (row["n_samples"], row["n_series"], row["first_line"]) == (10, 1, 13)
    assert "DCGM_FI_DEV_GPU_UTIL = 61 from line 13 for 10 samples" in row["detail"]
    assert sorted(values(r, "DCGM_FI_DEV_GPU_UTIL")) == sorted(
        90 + i % 3 for i in range(24) if not 4 <= i <= 13
    )


def test_no_stale_run_when_repeats_are_not_consecutive(tmp_path):
    # Board power (min_run 5) takes only two values, alternating: 600.5, 601.5, 600.5, ... Each
    # value repeats 12 times in 24 samples but never twice in a row: no run, nothing stale.
    power = [600.5 + (i % 2) for i in range(24)]
    p = archive(tmp_path, "alternating.prom", {
        "DCGM_FI_DEV_POWER_USAGE": power, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": GR,
    })  # fmt: skip
    r, _ = read(p)
    assert "stale_field" not in checks(r) and "stale" not in checks(r)
    assert values(r, "DCGM_FI_DEV_POWER_USAGE") == power
