"""Reader tables: Markdown with human headers, rounding, thousands separators, a dash for missing,
text kept as text, wide tables split to the text column, and the full detail as CSV."""

import datetime as dt
import re

import polars as pl
import pypandoc
import pytest

from trainperf.report.display import (
    CELL_PADDING_CH,
    MISSING,
    TEXT_WIDTH_CH,
    Col,
    format_value,
    min_width,
    record,
    split_columns,
    table,
    to_markdown,
)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _html(markdown: str) -> str:
    return pypandoc.convert_text(markdown, "html5", format="markdown", extra_args=["--wrap=none"])


def test_format_value_by_hand():
    assert format_value(1258291200, Col("Tokens")) == "1,258,291,200"
    assert format_value(639.5556, Col("Power (W)", 0)) == "640"
    assert format_value(40.6264, Col("Time (min)", 2)) == "40.63"
    assert format_value(0.4693, Col("MFU", 1, percent=True)) == "46.9\u00a0%"  # no-break space
    assert format_value(None, Col("x")) == MISSING
    assert format_value(float("nan"), Col("x", 2)) == MISSING
    assert format_value("a|b", Col("x")) == "a\\|b"
    assert format_value(True, Col("x")) == "yes"
    # 3142.877e9 bytes in GB with one decimal; a negative gap with a real minus sign
    assert format_value(3142.877e9, Col("GB", 1, scale=1e-9)) == "3,142.9"
    assert format_value(-0.0756, Col("gap", 1, percent=True)) == "−7.6\u00a0%"
    assert format_value(-0.0001, Col("gap", 2)) == "0.00"  # no "−0.00"
    # 9 days 22 h as days, from seconds: 857,000 s / 86,400 = 9.92
    assert format_value(857_000, Col("days", 2, scale=1 / 86400)) == "9.92"


def test_datetimes_and_dates():
    t = dt.datetime(2024, 10, 2, 19, 13, 14, 395000, tzinfo=dt.UTC)
    assert format_value(t, Col("Start")) == "2024-10-02 19:13:14 UTC"
    assert format_value(t, Col("Start", time_format="%Y-%m-%d %H:%M")) == "2024-10-02 19:13 UTC"
    assert format_value(t, Col("Month", time_format="%Y-%m-%d")) == "2024-10-02"
    assert format_value(dt.date(2025, 1, 1), Col("Day")) == "2025-01-01"


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
    assert _cells(lines[0]) == ["System", "GPUs", r"Time to train \(min\)"]
    # pipe-table alignment row: text left, numbers right
    cells = _cells(lines[1])
    assert cells[0].startswith(":") and not cells[0].endswith(":")
    assert cells[1].endswith(":") and cells[2].endswith(":")
    assert _cells(lines[2]) == ["Eos", "768", "40.63"]
    assert _cells(lines[3]) == ["SAKURAONE", "800", MISSING]
    assert "x" not in lines[0]
    html = _html(md)
    assert "<th" in html and "Time to train (min)" in html and "<td" in html


def test_separator_dashes_are_the_visible_widths():
    # pandoc shares the text width out by the number of dashes; markup must not count
    df = pl.DataFrame({"a": ["eos-dfw_n1344_ngc24.04_nemo"], "b": [1.5]})
    lines = to_markdown(df, {"a": "System", "b": Col("Time", 1)}).splitlines()
    # visible widths: the system name, 27 characters; "Time", 4 characters
    assert _cells(lines[1]) == [":" + "-" * 27, "-" * 4 + ":"]


def test_text_stays_text():
    hostile = "<img src=x onerror=alert(1)>"
    md = to_markdown(pl.DataFrame({"name": [hostile, "*bold* @fig-x $x$"]}), {"name": "Name"})
    html = _html(md)
    assert "<img" not in html and "&lt;img src=x onerror=" in html
    assert "<em>" not in html and "citation" not in html and "<math" not in html
    assert "*bold* @fig-x $x$" in html


def test_long_tokens_get_break_opportunities_and_urls_become_links():
    url = "https://www.top500.org/lists/top500/2023/11/"
    md = to_markdown(
        pl.DataFrame({"s": ["eos-dfw_n1344_ngc24.04_nemo", "short_name"], "u": [url, "x"]}),
        {"s": "System", "u": "Source"},
    )
    html = _html(md)
    # no break inside a version number (issue 39 found "training_4. / 1.0" broken at the dot)
    assert "eos-<wbr>dfw_<wbr>n1344_<wbr>ngc24.04_<wbr>nemo" in html
    assert "short_name" in html  # 10 characters: left alone
    assert f'href="{url}"' in html
    # the whole URL is the visible text
    assert (
        re.sub(r"<wbr>", "", re.search(rf'href="{re.escape(url)}">(.*?)</a>', html).group(1)) == url
    )


def test_min_width_is_the_longest_unbreakable_run():
    # "Time to train (min)" breaks at spaces: longest word "(min)", 5; "1,258,291,200" is 13
    assert min_width([r"Time to train \(min\)", "1,258,291,200"]) == 13
    # visible runs "eos-", "dfw_", "n1344": the longest is 5
    assert min_width(["eos\\-<wbr>dfw\\_<wbr>n1344"]) == 5
    assert min_width(["[a<wbr>bcdef](<https://x.org/very/long>)"]) == 5


def test_split_columns_by_hand():
    # widths + 2 characters of padding each: key 8+2=10; a 28+2, b 28+2, c 18+2 -> budget 70:
    # key+a+b = 70 fits, c goes to a second table with the key again
    widths = {"k": 8, "a": 28, "b": 28, "c": 18}
    assert CELL_PADDING_CH == 2
    assert split_columns(widths, ["k"], budget=70) == [["k", "a", "b"], ["k", "c"]]
    assert split_columns(widths, ["k"], budget=200) == [["k", "a", "b", "c"]]
    # a column wider than the budget still gets a table of its own
    assert split_columns({"k": 5, "wide": 100}, ["k"], budget=40) == [["k", "wide"]]


def test_wide_frame_is_split_into_tables_that_fit_the_text_column():
    n = 13  # thirteen numeric columns of "1,234,567.8" (11 characters + 2): 169 > 86
    df = pl.DataFrame({"system": ["Eos"], **{f"c{i}": [1234567.8] for i in range(n)}})
    md = to_markdown(df, {"system": "System", **{f"c{i}": Col(f"C{i}", 1) for i in range(n)}})
    parts = md.split("\n\n")
    # System (6+2) + k columns of 13 <= 86  ->  k = 6 per table: 6 + 6 + 1
    assert TEXT_WIDTH_CH == 86
    assert [len(_cells(p.splitlines()[0])) - 1 for p in parts] == [6, 6, 1]
    for p in parts:
        header = _cells(p.splitlines()[0])
        assert header[0] == "System"
        widths = [min_width([h, "Eos" if h == "System" else "1,234,567.8"]) for h in header]
        assert sum(w + CELL_PADDING_CH for w in widths) <= TEXT_WIDTH_CH
    assert _html(md).count("<table") == 3
    # a table that fits keeps the order given, key or not
    small = to_markdown(df, {"c0": "C0", "system": "System"}, key=["system"])
    assert _cells(small.splitlines()[0]) == ["C0", "System"]


def test_digits_per_row_from_a_column():
    df = pl.DataFrame(
        {"metric": ["tensor_active", "power"], "mean": [0.45041, 639.5556], "d": [3, 0]}
    )
    md = to_markdown(df, {"metric": "Metric", "mean": Col("Mean", "d")})
    assert [_cells(line)[1] for line in md.splitlines()[2:]] == ["0.450", "640"]


def test_unknown_column_is_named():
    with pytest.raises(KeyError, match="no column.*nope"):
        to_markdown(pl.DataFrame({"a": [1]}), {"nope": "Nope"})


def test_table_is_markdown_plain_and_csv_never_html():
    df = pl.DataFrame({"a": [1234, None], "b": [0.123456, 2.0]})
    obj = table(df, {"a": "A"})
    bundle = obj._repr_mimebundle_()
    assert set(bundle) == {"text/markdown", "text/plain", "text/csv"}
    assert bundle["text/markdown"].startswith("| ")
    assert "1,234" in bundle["text/plain"] and "\\" not in bundle["text/plain"]
    # the CSV is the full detail: every column, unrounded
    assert bundle["text/csv"].splitlines() == ["a,b", "1234,0.123456", ",2.0"]
    detail = pl.DataFrame({"z": ["all"]})
    assert table(df, {"a": "A"}, detail=detail).csv.splitlines() == ["z", "all"]


def test_a_table_cut_to_its_first_rows_says_how_many_it_shows():
    full = pl.DataFrame({"a": list(range(92))})
    md = table(full.head(15), {"a": "A"}, detail=full)._repr_mimebundle_()["text/markdown"]
    assert md.rstrip().endswith("Shown: 15 of the 92 rows of the CSV download.")
    # every row shown: no such line
    whole = table(full, {"a": "A"}, detail=full)._repr_mimebundle_()["text/markdown"]
    assert "Shown:" not in whole


def test_record_shows_one_row_as_fields():
    df = pl.DataFrame(
        {
            "n_jobs": [2000],
            "share": [0.575],
            "first": [dt.datetime(2024, 6, 1, 16, 18, tzinfo=dt.UTC)],
        }
    )
    md = record(
        df,
        {
            "n_jobs": "Jobs",
            "share": Col("Successful", 1, percent=True),
            "first": Col("First start", time_format="%Y-%m-%d %H:%M"),
        },
    ).markdown
    rows = [_cells(line) for line in md.splitlines()]
    assert rows[0] == ["Quantity", "Value"]
    assert rows[2:] == [
        ["Jobs", "2,000"],
        ["Successful", "57\\.5\u00a0\\%"],
        ["First start", "2024\\-06\\-01 16\\:18 UTC"],
    ]
    assert "57.5\u00a0%" in _html(md) and "2024-06-01 16:18 UTC" in _html(md)


def test_record_of_several_rows_has_one_column_per_row():
    # two captured GPUs compared on two quantities with their own digits
    df = pl.DataFrame(
        {"who": ["1 GPU", "2 GPU DDP, GPU 0"], "mfu": [0.5011, 0.4758], "clock": [1597.8, 1587.5]}
    )
    md = record(
        df, {"mfu": Col("MFU", 1, percent=True), "clock": Col("SM clock (MHz)", 0)}, label="who"
    ).markdown
    rows = [_cells(line) for line in md.splitlines()]
    assert rows[0] == ["Quantity", "1 GPU", "2 GPU DDP, GPU 0"]
    assert [c.endswith(":") for c in rows[1]] == [False, True, True]  # numbers right-aligned
    assert rows[2:] == [
        ["MFU", "50\\.1\u00a0\\%", "47\\.6\u00a0\\%"],
        [r"SM clock \(MHz\)", "1,598", "1,588"],
    ]
    with pytest.raises(ValueError, match="needs label="):
        record(df, {"mfu": "MFU"})


def test_a_percentage_never_breaks_from_its_sign():
    # "50.1 %" is one unbreakable run of 6 characters; a plain space would let it wrap
    text = format_value(0.5011, Col("MFU", 1, percent=True))
    assert min_width([text]) == 6 and "<wbr>" not in text


def test_a_benchmark_column_shows_the_names_readers_know():
    # the MLPerf Training results tables name them "GPT-3 175B", "Llama 2 70B LoRA"; an id the
    # table does not know stays as it is; other columns are not renamed
    df = pl.DataFrame({"benchmark": ["gpt3", "llama2_70b_lora", "newbench"], "note": ["gpt3"] * 3})
    t = to_markdown(df, {"benchmark": "Benchmark", "note": "Note"})
    rows = [r for r in t.splitlines() if r.startswith("|")][2:]
    assert [r.split("|")[1].strip() for r in rows] == [
        "GPT\\-3 175B",
        "Llama 2 70B LoRA",
        "newbench",
    ]  # "-" escaped for Markdown
    assert all(r.split("|")[2].strip() == "gpt3" for r in rows)
    # a Col of one's own keeps the ids unless it asks for labels
    t = to_markdown(df, {"benchmark": Col("Benchmark id")})
    assert "| gpt3" in t and "GPT-3" not in t


def test_numbers_round_half_up_on_the_decimal_they_stand_for():
    # 99.65 is 99.6499... in binary and Python's format gives 99.6, while 81.65 (81.650...01)
    # gives 81.7: a cumulative-share column showed both (a reader's review). By hand, half up:
    assert format_value(99.65, Col("x", 1)) == "99.7"
    assert format_value(81.65, Col("x", 1)) == "81.7"
    assert format_value(0.9965, Col("x", 1, percent=True)) == "99.7\u00a0%"
    assert format_value(-0.04, Col("x", 1)) == "0.0"  # no negative zero
    assert format_value(-2.25, Col("x", 1)) == "−2.3"  # half away from zero, a real minus
    assert format_value(1_258_291_200_123.0, Col("x", 0)) == "1,258,291,200,123"
