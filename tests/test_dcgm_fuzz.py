"""A small property test of the DCGM readers (the seeded 20k-input fuzz runs are tests/fuzz/fuzz_dcgm.py):
damaged input gives a frame or the product's own error naming the source, never another exception."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainperf import dcgm
from trainperf.errors import TrainperfError

D = Path(__file__).parent / "data" / "dcgm"
sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import mutate  # noqa: E402

EXPO = (D / "archive_mixed_hostname.prom").read_bytes()
DMON = (D / "dmon_timed.txt").read_bytes()
API = (D / "api_matrix.json").read_bytes()


def _damage(data: bytes, cut: int, junk: bytes, at: int) -> bytes:
    data = data[: max(0, len(data) - cut)]
    i = at % (len(data) + 1)
    return data[:i] + junk + data[i:]


def _read_or_product_error(read, data: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            f = read(data)
        except TrainperfError as e:
            assert (
                getattr(e, "source", None) == "<bytes>" or "<bytes>" in str(e) or "<json>" in str(e)
            )
            return
    assert f.schema == pl.Schema(dcgm.SCHEMA)


common = dict(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(**common)
@given(st.integers(0, 400), st.binary(max_size=12), st.integers(0, 10_000))
def test_exposition_damage(cut, junk, at):
    _read_or_product_error(
        lambda b: dcgm.read_exposition(b, timestamp=0), _damage(EXPO, cut, junk, at)
    )


@settings(**common)
@given(st.integers(0, 200), st.binary(max_size=12), st.integers(0, 10_000))
def test_dmon_damage(cut, junk, at):
    _read_or_product_error(lambda b: dcgm.read_dmon(b, hostname="n"), _damage(DMON, cut, junk, at))


@settings(**common)
@given(st.integers(0, 2**32))
def test_prometheus_api_wrong_node_types(seed):
    data = mutate.mutate_json(API, random.Random(seed))
    _read_or_product_error(dcgm.read_prometheus_api, data)
