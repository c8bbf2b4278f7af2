"""The product's error types and the one-line error printer."""

import warnings

from trainperf.errors import DataWarning, InputError, TrainperfError, format_error, print_error
from trainperf.quality import QUALITY_SCHEMA, QualityLog


def test_format_error_follows_the_cause_and_keeps_one_line():
    try:
        try:
            raise InputError("x.txt:3: expected a number\nmore detail", "x.txt", 3)
        except InputError as inner:
            raise RuntimeError("wrapper") from inner
    except RuntimeError as outer:
        assert format_error(outer) == "InputError: x.txt:3: expected a number"


def test_input_error_is_a_value_error_with_source_and_line():
    e = InputError("bad", "f.prom", 7)
    assert isinstance(e, ValueError) and isinstance(e, TrainperfError)
    assert (e.source, e.line) == ("f.prom", 7)


def test_print_error_one_line(capsys):
    assert print_error(ValueError("boom\nsecond"), debug=False) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("trainperf: error: ValueError: boom")


def test_quality_log_rows_and_warnings():
    log = QualityLog()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        log.add(
            "a.prom",
            "duplicate_series",
            "excluded",
            "2 series for gpu 0",
            n_series=2,
            first_line=14,
        )
    assert len(w) == 1 and isinstance(w[0].message, DataWarning)
    assert str(w[0].message).startswith("a.prom:14: 2 series for gpu 0")
    assert (w[0].message.source, w[0].message.line, w[0].message.check) == (
        "a.prom",
        14,
        "duplicate_series",
    )
    f = log.frame()
    assert f.schema == QUALITY_SCHEMA
    assert f.row(0, named=True)["n_series"] == 2 and f["n_gpus"][0] is None
