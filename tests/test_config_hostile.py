"""Hostile configs: alias bombs, recursive aliases, deep nesting and huge files are refused
with one line naming the file, without expanding them (a bounded allocation); ordinary anchors still work."""

from __future__ import annotations

import tracemalloc

import pytest
import yaml

from trainperf.config import yamlfile
from trainperf.errors import ConfigError

# the classic "billion laughs": 9 levels of 9 aliases, 9^9 = 387,420,489 "lol"s, in 324 bytes
BOMB = "".join(
    ["a: &a [{}]\n".format(",".join(["lol"] * 9))]
    + [
        f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)


def refused_fast(fn, *args, match: str) -> None:
    # refused without expanding it: the refusal allocates tens of MiB at most (the expansion took 6 GB
    # and 169 s before). A work bound, not a timer: the time is for benchmarks, not unit tests.
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=match):
            fn(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak / 2**20:.1f} MiB allocated while refusing"


def test_billion_laughs_refused_fast(tmp_path):
    assert len(BOMB.encode()) == 324
    p = tmp_path / "bomb.yaml"
    p.write_text(BOMB)
    refused_fast(
        yamlfile.load_yaml_file, p, match=r"bomb\.yaml: more than 100,000 values .*aliases"
    )


def test_recursive_alias_refused():
    refused_fast(
        yamlfile.load_yaml_text, "a: &a [1, *a]\n", "t", match=r"t: line 1: .*contains itself"
    )


@pytest.mark.parametrize("text", ["[" * 100_000, "{a: " * 1000, "- " * 100_000 + "x"])
def test_deep_nesting_refused_fast(text):
    refused_fast(yamlfile.load_yaml_text, text, "t", match=r"t: line 1: nested more than 64")


def test_huge_file_refused_without_reading_it(tmp_path):
    p = tmp_path / "big.yaml"
    with p.open("wb") as fh:
        fh.truncate(yamlfile.MAX_YAML_BYTES + 1)  # sparse: 1 MiB + 1 byte
    refused_fast(yamlfile.load_yaml_file, p, match=r"big\.yaml: 1,048,577 bytes")


def test_ordinary_anchors_and_brackets_in_strings_still_load():
    text = 'base: &b {tp: 8, pp: 4}\nrun: *b\nname: "[[[[[[[[[[ not nesting ]]]]]]]]]]" # {{{\n'
    assert yamlfile.load_yaml_text(text, "t") == {
        "base": {"tp": 8, "pp": 4}, "run": {"tp": 8, "pp": 4},
        "name": "[[[[[[[[[[ not nesting ]]]]]]]]]]",
    }  # fmt: skip


def test_expanded_size_counts_shared_nodes_once_but_expansions_fully():
    # 3 levels of 9 aliases: the document stands for 1 + 9 + 81 + 729 ... nodes; by hand, a list
    # of n children is 1 + n x child: l0 = 1 + 9 = 10, l1 = 1 + 9*10 = 91, l2 = 1 + 9*91 = 820;
    # the mapping = 1 + 3 keys + 10 + 91 + 820 = 925
    text = "".join(BOMB.splitlines(keepends=True)[:3])
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    assert yamlfile._expanded_size(node, 10**9) == 925


def test_long_comments_and_blank_lines_are_not_nesting():
    # a comment line of 150 characters at column 0 and a line of 200 spaces: no indent, no
    # content, so no nesting (they were refused as "nested more than 64 levels" once)
    text = "# " + "x" * 148 + "\n" + " " * 200 + "\nrun:\n  tp: 8   # " + "y" * 150 + "\n"
    assert yamlfile.load_yaml_text(text, "t") == {"run": {"tp": 8}}


def test_a_quoted_key_deep_in_a_block_still_counts_as_indent():
    # 130 columns of indent before a quoted key: more than 2 x 64, refused on its line (3)
    text = "a:\n  b:\n" + " " * 130 + '"c": 1\n'
    with pytest.raises(ConfigError, match=r"t: line 3: nested more than 64"):
        yamlfile.load_yaml_text(text, "t")
