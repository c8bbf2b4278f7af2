"""Property test of the MLPerf power reader: a damaged power log never raises, every energy it gives
is finite and non-negative, and a clean log's energy does not depend on the order of its lines."""

from __future__ import annotations

import math
import random
import warnings

from helpers import mllog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainperf.power import file_energy, read_power_log

T0 = 1_700_000_000_000
VALUES = st.one_of(
    st.none(), st.booleans(), st.text(max_size=5), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2),
)  # fmt: skip
KEYS = st.sampled_from(
    ["power_reading", "power_measurement_start", "power_measurement_stop", "conversion_eff",
     "interconnect_power_est", "other"]
)  # fmt: skip


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    events=st.lists(st.tuples(KEYS, VALUES, st.integers(-5000, 200_000)), max_size=30),
    junk=st.lists(st.binary(max_size=40), max_size=4),
    name=st.sampled_from(["node_0.txt", "sw_0.txt"]),
)
def test_damaged_power_logs_never_raise(tmp_path_factory, events, junk, name):
    lines = [mllog(k, v, T0 + dt) for k, v, dt in events]
    data = "\n".join(lines).encode() + b"\n" + b"\n".join(b":::MLLOG " + j for j in junk)
    path = tmp_path_factory.mktemp("p") / name
    path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = read_power_log(path)
        row, issues = file_energy(log, 60_000.0, T0, T0 + 60_000)
    e = row["energy_j"]
    assert e is None or (math.isfinite(e) and e >= 0)
    assert all(
        i.check and i.action in ("excluded", "corrected", "flagged", "parse_error") for i in issues
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(watts=st.lists(st.floats(0, 20_000), min_size=2, max_size=40), seed=st.integers(0, 10**6))
def test_line_order_does_not_change_the_energy(tmp_path_factory, watts, seed):
    # the summarizer sorts the lines by time: a shuffled file gives the same energy
    lines = [mllog("power_measurement_start", None, T0), mllog("conversion_eff", 0.9, T0)]
    lines += [
        mllog("power_reading", w, T0 + 1000 * (i + 1), {"host": "n"}) for i, w in enumerate(watts)
    ]
    # the stop half a second after the last reading: at equal times the summarizer's stable sort
    # keeps the file order, so only distinct times make the energy independent of the line order
    lines.append(mllog("power_measurement_stop", None, T0 + 1000 * len(watts) + 500))
    d = tmp_path_factory.mktemp("o")
    (d / "a" / "node_0.txt").parent.mkdir()
    (d / "a" / "node_0.txt").write_text("\n".join(lines) + "\n")
    shuffled = lines[:]
    random.Random(seed).shuffle(shuffled)
    (d / "b" / "node_0.txt").parent.mkdir()
    (d / "b" / "node_0.txt").write_text("\n".join(shuffled) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ea = file_energy(read_power_log(d / "a" / "node_0.txt"), 30_000.0)[0]["energy_j"]
        eb = file_energy(read_power_log(d / "b" / "node_0.txt"), 30_000.0)[0]["energy_j"]
    # by hand: each reading covers the second before it; the window is n + 0.5 s; scaled to 30 s
    assert ea == eb or math.isclose(ea, eb, rel_tol=1e-12)
    assert math.isclose(
        ea, 0.9 * sum(watts) * 30.0 / (len(watts) + 0.5), rel_tol=1e-9, abs_tol=1e-9
    )
