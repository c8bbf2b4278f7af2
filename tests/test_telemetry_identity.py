"""The rewritten per-phase statistics equal the old implementation (tests/telemetry_reference.py) on a
synthetic store, in one batch and in host batches, in the documented row order, and on the DCGM
fixtures (damaged ones included)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import polars as pl
import pytest
import telemetry_reference as old
from polars.testing import assert_frame_equal

from trainperf import dcgm, telemetry
from trainperf.synthetic import telemetry as synthetic
from trainperf.telemetry import _common
from trainperf.telemetry import phases as phases_mod


def test_phase_stats_and_links_identical_to_old(tmp_path, monkeypatch):
    cfg = synthetic.SyntheticConfig(n_nodes=6, job_nodes=4, interval_s=30.0)
    ph = synthetic.default_phases()
    synthetic.write_parquet(cfg, ph, tmp_path / "s")
    lf = dcgm.scan_parquet(tmp_path / "s")
    key = ["phase", "hostname", "gpu", "metric"]
    for level in ("gpu", "phase", "kind"):
        a = telemetry.phase_stats(lf, ph, level=level)
        b = old.phase_stats(lf, ph, level=level)
        k = [c for c in key if c in a.columns]
        assert a.height > 0 and a.sort(k).equals(documented_types(b).sort(k)), level
    lt = telemetry.link_throughput(lf, ph, kind="train").sort("hostname", "rail")
    ref = old.link_throughput(lf, ph, kind="train").sort("hostname", "rail")
    # the same sums in another order: equal to float rounding (1e-5 B/s on 1e10 B/s was seen)
    assert lt.height == ref.height > 0
    assert_frame_equal(lt, ref, check_exact=False, rel_tol=1e-12, abs_tol=0.0)
    one = telemetry.phase_stats(lf, ph, level="gpu")
    monkeypatch.setattr(_common, "BATCH_ROWS", 20_000)  # several host batches
    assert len(_common.host_batches(lf)) > 1
    assert telemetry.phase_stats(lf, ph, level="gpu").equals(one)


# ---------------------------------------------------------------------------------------------
# The rewrite of issue 16 (linear phase table, per-batch codes and slices, link filters by
# interval number): the same frames, in the same order, as the implementation it replaced.
# ---------------------------------------------------------------------------------------------


DCGM_DATA = Path(__file__).parent / "data" / "dcgm"
KIND_ORDER = {"init": 0, "train": 1, "eval": 2}


def documented_types(old_stats: pl.DataFrame) -> pl.DataFrame:
    """The old result (String text columns) with the dtypes phase_stats documents: at
    level="gpu" (hostname and gpu columns) phase, kind, hostname, metric, unit Categorical."""
    if not {"hostname", "gpu"} <= set(old_stats.columns):
        return old_stats
    cat = ["phase", "kind", "hostname", "metric", "unit"]
    return old_stats.with_columns(pl.col(c).cast(pl.Categorical) for c in cat)


def documented_order(old_stats: pl.DataFrame, phases: pl.DataFrame) -> pl.DataFrame:
    """The old result in the order phase_stats documents: kind (init, train, eval, other),
    index, hostname (null first), gpu, metric (its ACTIVITY_FIELDS position), then the phase
    (in the order the phases start). The old implementation sorted on all but the last key
    (its ties, phases of equal kind and index, came in any order)."""
    metric_pos = {m: i for i, m in enumerate(telemetry.ACTIVITY_FIELDS)}
    phase_pos = {
        p: i for i, p in enumerate(phases.sort("start")["phase"].unique(maintain_order=True))
    }
    cols = old_stats.columns
    d = old_stats.with_columns(
        pl.col("kind").replace_strict(KIND_ORDER, default=9, return_dtype=pl.Int32).alias("_k"),
        pl.col("metric").replace_strict(metric_pos, return_dtype=pl.Int32).alias("_m"),
    )
    by = ["_k"] + [c for c in ("index", "hostname", "gpu") if c in cols] + ["_m"]
    if "phase" in cols:
        d = d.with_columns(
            pl.col("phase").replace_strict(phase_pos, return_dtype=pl.Int32).alias("_p")
        )
        by.append("_p")
    return documented_types(d.sort(by, nulls_last=False, maintain_order=True).select(cols))


def tiled(phases: pl.DataFrame, k: int) -> pl.DataFrame:
    """k copies of the run back to back, renamed r02_... (as benchmarks/telemetry_scale.py):
    phases of equal kind and index, the tie the old sort left open."""
    span = phases["end"].max() - phases["start"].min() + dt.timedelta(seconds=60)
    parts = [phases]
    for i in range(1, k):
        parts.append(
            phases.with_columns(
                pl.col("start") + span * i,
                pl.col("end") + span * i,
                (pl.lit(f"r{i + 1:02d}_") + pl.col("phase")).alias("phase"),
            )
        )
    return pl.concat(parts)


@pytest.fixture(scope="module")
def tiled_store(tmp_path_factory):
    """6 nodes, 2 tiled runs at 30 s, plus rows without a hostname (null host first in order)."""
    base = synthetic.default_phases()
    ph = tiled(base, 2)
    cfg = synthetic.SyntheticConfig(n_nodes=6, job_nodes=4, interval_s=30.0)
    root = tmp_path_factory.mktemp("tiled")
    frames = list(synthetic.iter_frames(cfg, ph))
    data = pl.concat(frames)
    nulls = data.filter(pl.col("hostname") == data["hostname"].min()).head(3000)
    data = pl.concat([data, nulls.with_columns(pl.lit(None, pl.String).alias("hostname"))])
    dcgm.write_parquet_partitioned(data.filter(pl.col("hostname").is_not_null()), root)
    return data, dcgm.scan_parquet(root), ph


@pytest.mark.parametrize("level", ["gpu", "phase", "kind"])
def test_phase_stats_same_frame_same_order_as_old(tiled_store, monkeypatch, level):
    data, lf, ph = tiled_store
    ref = documented_order(old.phase_stats(data, ph, level=level), ph)
    assert ref.height > 0
    assert telemetry.phase_stats(data, ph, level=level).equals(ref)
    if level == "gpu":
        assert ref["hostname"].null_count() > 0 and ref["hostname"][0] is None
        monkeypatch.setattr(
            _common, "BATCH_ROWS", 15_000
        )  # several host batches, null host among them
        assert len(_common.host_batches(data.lazy())) > 3
        assert telemetry.phase_stats(data, ph, level=level).equals(ref)
        store_ref = documented_order(old.phase_stats(lf, ph, level=level), ph)
        assert telemetry.phase_stats(lf, ph, level=level).equals(store_ref)


def test_write_phase_stats_same_rows_as_old_host_batch_by_host_batch(
    tiled_store, monkeypatch, tmp_path
):
    """write_phase_stats (issue 29, the per-GPU result streamed to Parquet): the old
    implementation's rows, with phase_stats' dtypes (Categorical text), each host batch in
    phase_stats' order within it and the batches in host order (null host first)."""
    data, lf, ph = tiled_store
    ref = documented_order(old.phase_stats(data, ph, level="gpu"), ph)
    monkeypatch.setattr(_common, "BATCH_ROWS", 15_000)
    batches = _common.host_batches(data.lazy())
    assert len(batches) > 3
    out = telemetry.write_phase_stats(data, ph, tmp_path / "st.parquet")
    assert out == tmp_path / "st.parquet"
    assert [p.name for p in tmp_path.iterdir()] == ["st.parquet"]  # no temporary file left
    got = pl.read_parquet(out)
    assert got.schema == ref.schema
    assert got.height == ref.height > 0
    text = ["phase", "kind", "hostname", "metric", "unit"]
    as_str = got.with_columns(pl.col(c).cast(pl.String) for c in text)
    # every row of the old result, and in the documented order once sorted
    assert documented_order(as_str, ph).equals(ref)
    # the file's order: batch by batch (hosts in order), within a batch as phase_stats orders it
    where = {h: i for i, b in enumerate(batches) for h in b}
    b_of = as_str["hostname"].to_list()
    pos = [where[h] for h in b_of]
    assert pos == sorted(pos)
    ref_str = ref.with_columns(pl.col(c).cast(pl.String) for c in text)
    for i, hosts in enumerate(batches):
        mine = as_str.filter(pl.Series(pos) == i)
        theirs = ref_str.filter(
            pl.col("hostname").is_in([h for h in hosts if h is not None])
            | (pl.col("hostname").is_null() if None in hosts else pl.lit(False))
        )
        assert mine.equals(theirs), hosts
    # from the store (lazy, partitioned) too; one batch: phase_stats' own order
    monkeypatch.setattr(_common, "BATCH_ROWS", 10**9)
    one = telemetry.write_phase_stats(lf, ph, tmp_path / "one.parquet")
    assert pl.read_parquet(one).equals(telemetry.phase_stats(lf, ph, level="gpu"))


def test_write_phase_stats_no_overlap_empty_file_and_warning(tiled_store, tmp_path):
    """Phases ten days after the telemetry: an empty file with the result's columns, and the
    same no_overlap warning as phase_stats."""
    data, _, ph = tiled_store
    later = ph.with_columns(
        pl.col("start") + dt.timedelta(days=10), pl.col("end") + dt.timedelta(days=10)
    )
    with pytest.warns(UserWarning, match="falls in the run's phases") as rec:
        ref = telemetry.phase_stats(data, later, level="gpu")
    assert rec[0].filename == __file__
    with pytest.warns(UserWarning, match="falls in the run's phases") as rec:
        out = telemetry.write_phase_stats(data, later, tmp_path / "e.parquet")
    assert rec[0].filename == __file__  # the warning names the caller's line
    got = pl.read_parquet(out)
    assert ref.height == 0 and got.height == 0
    assert got.schema == ref.schema


def test_link_throughput_same_as_old_in_batches(tiled_store, monkeypatch):
    data, lf, ph = tiled_store
    for kind in ("train", "eval", None):
        ref = old.link_throughput(lf, ph, kind=kind).sort("hostname", "rail")
        monkeypatch.setattr(_common, "BATCH_ROWS", 40_000)
        got = telemetry.link_throughput(lf, ph, kind=kind)
        assert got.height == ref.height > 0
        # pcie / nvlink: the same samples in the same order, exactly; nic_Bps: the old mean ran on
        # the streaming engine's morsels, whose sums differ run to run in the last bits (2e-15 seen)
        assert got.drop("nic_Bps").equals(ref.drop("nic_Bps")), kind
        assert_frame_equal(got, ref, check_exact=False, rel_tol=1e-12, abs_tol=0.0)


def interval_cases():
    """Hand-made phase sets: nested, overlapping, equal starts, touching, zero-length, reversed."""
    t0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    rnd = random.Random(16)
    cases = [
        [(0, 100), (10, 20), (15, 30)],  # nested and overlapping: the later start wins
        [(0, 10), (10, 20), (20, 20), (30, 25)],  # touching, zero-length, reversed
        [(5, 50), (5, 20), (0, 60)],  # equal starts
    ]
    for _ in range(40):
        n = rnd.randint(1, 25)
        cases.append(
            [(a, a + rnd.randint(-3, 40)) for a in (rnd.randint(0, 200) for _ in range(n))]
        )
    for c in cases:
        yield pl.DataFrame(
            {
                "phase": [f"p{i:02d}" for i in range(len(c))],
                "kind": [("train", "eval", "init")[i % 3] for i in range(len(c))],
                "index": list(range(len(c))),
                "start": [t0 + dt.timedelta(seconds=s) for s, _ in c],
                "end": [t0 + dt.timedelta(seconds=e) for _, e in c],
                "duration_s": [float(e - s) for s, e in c],
            },
            schema=telemetry.PHASE_SCHEMA,
        )


def test_interval_table_same_as_old():
    for ph in interval_cases():
        b_new, t_new = phases_mod.interval_table(ph)
        b_old, t_old = old._interval_table(ph)
        assert b_new == b_old
        assert t_new.equals(t_old), ph


def _fixture_frames():
    """Every DCGM fixture the readers accept (the damaged ones included), as reader frames."""
    for p in sorted(DCGM_DATA.iterdir()):
        if p.suffix not in (".prom", ".txt", ".json", ".csv"):
            continue
        try:
            f = dcgm.read(p).frame()
        except Exception:  # rejected formats (e.g. grafana_formatted.csv): nothing to analyse
            continue
        if f.height and f["timestamp"].null_count() < f.height:
            yield p.name, f


def fixture_phases(f: pl.DataFrame) -> pl.DataFrame:
    """init / train / eval / train over the fixture's own time range (quarters of it)."""
    lo, hi = f["timestamp"].min(), f["timestamp"].max() + dt.timedelta(seconds=1)
    q = [lo + (hi - lo) * i / 4 for i in range(5)]
    rows = [
        ("init", "init", 0),
        ("train_01", "train", 1),
        ("eval_01", "eval", 1),
        ("train_02", "train", 2),
    ]
    return pl.DataFrame(
        {
            "phase": [r[0] for r in rows],
            "kind": [r[1] for r in rows],
            "index": [r[2] for r in rows],
            "start": q[:4],
            "end": q[1:],
            "duration_s": [(q[i + 1] - q[i]).total_seconds() for i in range(4)],
        },
        schema=telemetry.PHASE_SCHEMA,
    )


@pytest.mark.filterwarnings(
    "ignore:.*NaN or \\+-Inf values.*:trainperf.dcgm.fields.DcgmWarning"
)  # api_matrix.json holds a NaN
def test_fixtures_same_as_old():
    seen = 0
    for name, f in _fixture_frames():
        ph = fixture_phases(f)
        for level in ("gpu", "phase", "kind"):
            got = telemetry.phase_stats(f, ph, level=level)
            assert got.equals(documented_order(old.phase_stats(f, ph, level=level), ph)), (
                name,
                level,
            )
        got = telemetry.link_throughput(f, ph, kind=None)
        ref = old.link_throughput(f, ph, kind=None).sort("hostname", "rail")
        assert_frame_equal(got, ref, check_exact=False, rel_tol=1e-12, abs_tol=0.0)
        seen += 1
    assert seen >= 8  # the exposition, dmon, API and CSV fixtures
