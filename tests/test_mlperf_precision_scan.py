"""``precision_from_log`` reads only the lines that name ``fp`` or ``bf16`` (issue 36), with the
line numbers iterating the file in text mode gives (universal newlines: ``\\r\\n`` and a lone
``\\r`` end a line; bytes that are not UTF-8 read as U+FFFD)."""

from __future__ import annotations

import pytest

from trainperf.mlperf import precision
from trainperf.mlperf.precision import precision_from_log

# blocks of a few bytes cut the file everywhere (a CRLF, a long line, the last line)
BLOCKS = pytest.mark.parametrize("block", [precision._BLOCK, 1, 2, 3, 7, 64])


@BLOCKS
def test_line_numbers_are_those_of_text_mode(tmp_path, monkeypatch, block):
    monkeypatch.setattr(precision, "_BLOCK", block)
    f = tmp_path / "result_0.txt"
    data = (
        b"first\r\n"  # line 1 (CRLF)
        b"progress 10%\r"  # line 2 (a lone CR ends a line, as a progress bar writes it)
        b"bad \xff\xfe bytes\n"  # line 3
        b"fp8=None, bf16=True\n"  # line 4: FP8 off with BF16 on
        + b"x" * 20_001 + b" fp8='hybrid'\n"  # line 5: longer than a configuration line: skipped
        b"last"
    )  # fmt: skip
    f.write_bytes(data)
    # the reference: what iterating the file in text mode numbers each line
    with open(f, encoding="utf-8", errors="replace") as fh:
        numbered = {line.strip()[:19]: no for no, line in enumerate(fh, 1)}
    assert numbered["fp8=None, bf16=True"] == 4
    prec, src = precision_from_log(f)
    assert prec == "bf16"
    assert src == "result_0.txt:4: fp8=None with bf16=True"


@BLOCKS
def test_settings_on_one_line_and_a_later_mllog_key(tmp_path, monkeypatch, block):
    monkeypatch.setattr(precision, "_BLOCK", block)
    f = tmp_path / "result_0.txt"
    f.write_text(
        "a\r\nconfig: fp8: e4m3 fp4=None\n"
        ':::MLLOG {"key": "lowest_numerical_precision_in_linear", "value": "nvfp4"}\n',
        encoding="utf-8",
    )
    # the MLLOG key wins over the setting (line 3, after the CRLF line 1)
    assert precision_from_log(f) == (
        "fp4",
        'result_0.txt:3: lowest_numerical_precision_in_linear "value": "nvfp4"',
    )


def test_a_log_without_either_word(tmp_path):
    f = tmp_path / "result_0.txt"
    f.write_bytes(b"nothing here\r\n\xff\n")
    assert precision_from_log(f) == (None, None)


@BLOCKS
def test_a_last_line_without_a_newline_and_lone_carriage_returns(tmp_path, monkeypatch, block):
    monkeypatch.setattr(precision, "_BLOCK", block)
    f = tmp_path / "result_0.txt"
    f.write_bytes(b"a\rb\r\rc\r\nfp8: true")  # lines a, b, "", c, then line 5 unterminated
    assert precision_from_log(f) == ("fp8", "result_0.txt:5: fp8: true")
    f.write_bytes(b"a\rb\r\rc\r\nfp8: true\r")
    assert precision_from_log(f) == ("fp8", "result_0.txt:5: fp8: true")
