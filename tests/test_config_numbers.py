"""Config numbers are plain decimal (issue 40): YAML 1.1 reads ``010`` as octal 8, ``0x1f`` as 31 and
``1:04`` as base 60 (64); a config refuses them with one line naming the file and the line, and reads
decimal numbers and quoted text as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainperf.config import load_config
from trainperf.config.yamlfile import load_yaml_file
from trainperf.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def demo_with(tmp_path: Path, old: str, new: str) -> Path:
    # the demo config in tmp_path, its relative paths (from configs/) made absolute
    text = (ROOT / "configs" / "sakuraone.yaml").read_text()
    assert old in text
    p = tmp_path / "cluster.yaml"
    p.write_text(text.replace(old, new, 1).replace("../data", str(ROOT / "data")))
    return p


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("010", "an octal number, 8"),
        ("1:04", "a base-60 (sexagesimal) number, 64"),
        ("0x64", "a hexadecimal number, 100"),
        ("0b1100100", "a binary number, 100"),
    ],
)
def test_non_decimal_integer_in_a_config_is_refused_with_its_line(tmp_path, value, kind):
    p = demo_with(tmp_path, "nodes: 100", f"nodes: {value}")
    line = p.read_text().splitlines().index(f"nodes: {value}") + 1
    with pytest.raises(ConfigError) as e:
        load_config(p)
    msg = str(e.value)
    assert "\n" not in msg
    assert str(p) in msg and f"line {line}:" in msg
    assert f"'{value}' is not a plain decimal integer" in msg and kind in msg


def test_the_demo_config_with_decimal_nodes_loads(tmp_path):
    assert load_config(demo_with(tmp_path, "nodes: 100", "nodes: 10")).nodes == 10


def test_decimal_numbers_and_quoted_text_read_as_written(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text('a: 10\nb: -3\nc: 0\nd: "010"\ne: 1.5\nf: 1_000\n')
    assert load_yaml_file(p) == {"a": 10, "b": -3, "c": 0, "d": "010", "e": 1.5, "f": 1000}


def test_sexagesimal_float_is_refused(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("a: 1\nratio: 1:04.5\n")
    with pytest.raises(ConfigError, match=r"line 2: '1:04.5' is not a plain decimal number"):
        load_yaml_file(p)


def test_huge_hex_is_refused_without_printing_it(tmp_path):
    # 5,000 hex digits: an int of ~20,000 bits, whose decimal text Python refuses to make
    p = tmp_path / "x.yaml"
    p.write_text("nodes: 0x" + "f" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"line 1: '0xf+' is not a plain decimal integer") as e:
        load_yaml_file(p)
    assert len(str(e.value)) < 400
