"""Reader tables: Markdown with human headers, rounding, thousands separators and a dash for missing."""

import polars as pl
import pytest

from trainperf.report.display import MISSING, Col, format_value, table, to_markdown


def test_format_value_by_hand():
    assert format_value(1258291200, Col("Tokens")) == "1,258,291,200"
    assert format_value(639.5556, Col("Power (W)", 0)) == "640"
    assert format_value(40.6264, Col("Time (min)", 2)) == "40.63"
    assert format_value(0.4693, Col("MFU", 1, percent=True)) == "46.9 %"
    assert format_value(None, Col("x")) == MISSING
    assert format_value(float("nan"), Col("x", 2)) == MISSING
    assert format_value("a|b", Col("x")) == "a\\|b"


def test_markdown_table_has_headers_no_index_and_right_aligned_numbers():
    df = pl.DataFrame(
        {
            "system": ["Eos", "SAKURAONE"],
            "minutes": [40.6264, None],
            "n_gpus": [768, 800],
            "x": [1, 2],
        }
    )
    md = to_markdown(
        df, {"system": "System", "n_gpus": "GPUs", "minutes": Col("Time to train (min)", 2)}
    )
    lines = md.splitlines()
    assert [c.strip() for c in lines[0].strip("|").split("|")] == [
        "System",
        "GPUs",
        "Time to train (min)",
    ]
    # pipe-table alignment row: text left, numbers right
    cells = [c.strip() for c in lines[1].strip("|").split("|")]
    assert cells[0].startswith(":") and not cells[0].endswith(":")
    assert cells[1].endswith(":") and cells[2].endswith(":")
    assert [c.strip() for c in lines[2].strip("|").split("|")] == ["Eos", "768", "40.63"]
    assert [c.strip() for c in lines[3].strip("|").split("|")] == ["SAKURAONE", "800", MISSING]
    assert "x" not in lines[0]


def test_unknown_column_is_named():
    with pytest.raises(KeyError, match="no column.*nope"):
        to_markdown(pl.DataFrame({"a": [1]}), {"nope": "Nope"})


def test_table_is_a_markdown_display_object():
    obj = table(pl.DataFrame({"a": [1]}), {"a": "A"})
    assert obj._repr_markdown_().startswith("| ")
