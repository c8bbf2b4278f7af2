"""YAML as the command line reads it (the cluster config, ``--params``, ``-p`` values): every
failure is a one-line :class:`~trainperf.errors.ConfigError` naming the file (or the ``-p``
parameter) and the line, never a ``UnicodeDecodeError`` or a PyYAML ``ParserError``.

Numbers are plain decimal: YAML 1.1's octal (``010``), hexadecimal, binary and base-60 (``1:04``)
integers are refused with their line (:func:`_decimal_int`).

PyYAML's ``safe_load`` keeps the last of two equal keys without a word (YAML 1.2 says keys are
unique, PyYAML does not check); :class:`UniqueKeyLoader` refuses the second one, naming it and its
line.

A config is small and comes from a user: hostile or broken input is refused before it can cost
memory or time. A file larger than :data:`MAX_YAML_BYTES` is not read; a document whose nodes,
aliases expanded, exceed :data:`MAX_YAML_NODES` (the "billion laughs": 400 bytes of nested
aliases that stand for 10^9 strings once something walks them, as papermill's parameter
injection does), whose aliases refer to themselves, or that nests deeper than Python's stack is
refused with a one-line :class:`~trainperf.errors.ConfigError`. The check runs on the composed node
graph (aliases are shared nodes there), memoised, so it costs the size of the text, not of the
expansion.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from trainperf.errors import ConfigError

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "UniqueKeyLoader",
    "load_yaml_file",
    "load_yaml_text",
]

MAX_YAML_BYTES = 1 << 20
"""Largest config / ``--params`` file read (1 MiB; the demo's config is 3 kB)."""

MAX_YAML_DEPTH = 64
"""Deepest nesting of a config (``[``/``{`` flow collections or indented blocks; the demo's: 3).
PyYAML's scanner is quadratic in flow depth (100,000 ``[`` take minutes), so depth is measured
on the text before PyYAML sees it."""

MAX_YAML_NODES = 100_000
"""Most YAML nodes a document may stand for with its aliases expanded (the demo's config: ~200)."""


# libyaml's parser where PyYAML was built with it (the wheels are): 45x faster than the pure-Python
# scanner on a hostile 100 kB config (0.37 s -> 0.008 s), the same documents and errors
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class UniqueKeyLoader(_SafeLoader):
    """``yaml.SafeLoader`` (libyaml's ``CSafeLoader`` where there is one) that refuses a mapping
    with the same key twice."""


def _unique_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            continue  # PyYAML refuses an unhashable key itself, with its own mark
        line = key_node.start_mark.line + 1
        if key in seen:
            raise ConfigError(f"line {line}: duplicate key {key!r} (first at line {seen[key]})")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)

# YAML 1.1 (PyYAML) reads plain scalars that are not decimal numbers as numbers: ``010`` is octal 8,
# ``0x1f`` hex 31, ``0b11`` binary 3 and ``1:04`` base 60 (64); YAML 1.2 reads the first and last as
# strings. A user who writes ``nodes: 010`` means 10: a config number must be plain decimal, and
# anything else is refused with its line (YAML 1.1 spec, int and float types,
# https://yaml.org/type/int.html, https://yaml.org/type/float.html).
_DECIMAL_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")


def _int_kind(text: str) -> str:
    t = text.lstrip("+-")
    if ":" in t:
        return "a base-60 (sexagesimal) number"
    if t[:2].lower() == "0x":
        return "a hexadecimal number"
    if t[:2].lower() == "0b":
        return "a binary number"
    return "an octal number"


def _decimal_int(loader: UniqueKeyLoader, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if not _DECIMAL_INT.fullmatch(text):
        value = _SafeLoader.construct_yaml_int(loader, node)
        shown = f", {value}" if abs(value) < 10**30 else ""  # a huge int has no short decimal
        raise ConfigError(
            f"line {node.start_mark.line + 1}: {text[:40]!r} is not a plain decimal integer (YAML "
            f"1.1 reads it as {_int_kind(text)}{shown}); write the number in decimal, or quote it "
            "for text"
        )
    return _SafeLoader.construct_yaml_int(loader, node)


def _decimal_float(loader: UniqueKeyLoader, node: yaml.ScalarNode) -> float:
    text = str(node.value)
    if ":" in text:
        raise ConfigError(
            f"line {node.start_mark.line + 1}: {text[:40]!r} is not a plain decimal number (YAML 1.1 "
            "reads it as a base-60 (sexagesimal) number); write the number in decimal, or quote "
            "it for text"
        )
    return _SafeLoader.construct_yaml_float(loader, node)


UniqueKeyLoader.add_constructor("tag:yaml.org,2002:int", _decimal_int)
UniqueKeyLoader.add_constructor("tag:yaml.org,2002:float", _decimal_float)


_QUOTED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"\\]|\\.)*\"|#[^\n]*")
_BRACKETS = re.compile(r"[\[\]{}]")
# the indent before a line's first content: a line of only spaces (a comment's remains) nests nothing
_BLOCK_INDENT = re.compile(r"^([ \t]*(?:- +)*)(?=[^\s])", re.M)


def _blank(m: re.Match[str]) -> str:
    """A comment becomes nothing, a quoted scalar one placeholder character (it is content: the
    indent before it counts, its brackets do not); the line breaks inside either are kept."""
    breaks = "\n" * m.group().count("\n")
    return breaks if m.group().startswith("#") else "_" + breaks


def _too_deep(text: str) -> int | None:
    """The 1-based line where ``text`` nests deeper than :data:`MAX_YAML_DEPTH`, or None.

    Flow collections: brackets outside quoted scalars and comments (an approximation that can
    only over-count, for a bracket in a plain scalar); blocks: an indent of more than
    2 x MAX_YAML_DEPTH columns, ``- `` entries counted as indent."""
    bare = _QUOTED.sub(_blank, text)
    depth = 0
    for m in _BRACKETS.finditer(bare):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_YAML_DEPTH:
            return bare.count("\n", 0, m.start()) + 1
        depth = max(depth, 0)
    for m in _BLOCK_INDENT.finditer(bare):
        if len(m.group(1)) > 2 * MAX_YAML_DEPTH:
            return bare.count("\n", 0, m.start()) + 1
    return None


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes ``root`` stands for with every alias expanded, counted up to ``limit`` (memoised per
    node, so shared subtrees cost once); raises ConfigError for an alias that contains itself."""
    memo: dict[int, int] = {}
    active: set[int] = set()
    # iterative post-order walk: a deep document must not exhaust Python's stack here
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        k = id(node)
        if done:
            active.discard(k)
            if isinstance(node, yaml.MappingNode):
                kids = [n for pair in node.value for n in pair]
            else:
                kids = node.value
            memo[k] = min(limit + 1, 1 + sum(memo[id(c)] for c in kids))
            continue
        if k in memo:
            continue
        if k in active:
            line = node.start_mark.line + 1
            raise ConfigError(f"line {line}: an alias that contains itself (a recursive structure)")
        if isinstance(node, yaml.ScalarNode):
            memo[k] = 1
            continue
        active.add(k)
        stack.append((node, True))
        kids = (
            [n for pair in node.value for n in pair]
            if isinstance(node, yaml.MappingNode)
            else node.value
        )
        for c in kids:
            if id(c) in active:
                line = c.start_mark.line + 1
                raise ConfigError(
                    f"line {line}: an alias that contains itself (a recursive structure)"
                )
            if id(c) not in memo:
                stack.append((c, False))
    return memo[id(root)]


def _reader_problem(exc: yaml.reader.ReaderError, text: str) -> str:
    pos = exc.position if isinstance(exc.position, int) else 0
    line = text.count("\n", 0, pos) + 1
    ch = exc.character if isinstance(exc.character, int) else 0
    return (
        f"line {line}: character U+{ch:04X} is not allowed in YAML (a control character); remove it"
    )


def _yaml_problem(exc: yaml.YAMLError, text: str | None = None) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "not valid YAML"
    line = mark.line + 1 if mark is not None else None
    if line is not None and text is not None:  # libyaml marks the end of a text past its last line
        line = min(line, text.count("\n") + 1)
    where = f"line {line}: " if line is not None else ""
    return f"{where}not valid YAML ({problem})"


def load_yaml_text(text: str, where: str) -> Any:
    """Parse ``text`` as YAML (unique keys).

    Args:
        where: how the message names the text (``config FILE``, ``-p NB.PARAM``).

    Raises:
        ConfigError: ``{where}: line N: not valid YAML (...)``, ``{where}: line N: duplicate key``,
            more than :data:`MAX_YAML_BYTES` characters, more than :data:`MAX_YAML_NODES` values
            with aliases expanded, a recursive alias, or nesting deeper than Python's stack.
    """
    if len(text) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{where}: {len(text):,} characters, more than a config may have "
            f"({MAX_YAML_BYTES:,}); is it the right file?"
        )
    deep = _too_deep(text)
    if deep is not None:
        raise ConfigError(f"{where}: line {deep}: nested more than {MAX_YAML_DEPTH} levels deep; "
                          "not a config")  # fmt: skip
    try:
        loader = UniqueKeyLoader(text)  # the Python reader checks the characters here
    except yaml.reader.ReaderError as exc:
        raise ConfigError(f"{where}: {_reader_problem(exc, text)}") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node, MAX_YAML_NODES)
        if size > MAX_YAML_NODES:
            raise ConfigError(
                f"more than {MAX_YAML_NODES:,} values once its aliases (*name) are expanded "
                "(an alias bomb such as the 'billion laughs'?); refused - write the values out"
            )
        return loader.construct_document(node)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except yaml.reader.ReaderError as exc:  # libyaml checks the characters while parsing
        raise ConfigError(f"{where}: {_reader_problem(exc, text)}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: {_yaml_problem(exc, text)}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be a config") from None
    finally:
        loader.dispose()


def load_yaml_file(path: str | Path, what: str = "config") -> Any:
    """Read a YAML file as UTF-8 (unique keys).

    Returns:
        the parsed data (None for a file of nothing but blanks and comments).

    Raises:
        ConfigError: one line naming ``{what} {path}``: no such file, a folder, not UTF-8 (the
            byte offset), not valid YAML or a duplicate key (the line).
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{what} {path}: is a folder, expected a YAML file")
    if not path.is_file():
        raise ConfigError(f"{what} {path}: no such file")
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise ConfigError(
            f"{what} {path}: {size:,} bytes, more than a config may have ({MAX_YAML_BYTES:,}); "
            "is it the right file?"
        )
    with path.open("rb") as fh:
        raw = fh.read(MAX_YAML_BYTES + 1)  # a file that grew since stat() is still bounded
    if len(raw) > MAX_YAML_BYTES:
        raise ConfigError(
            f"{what} {path}: more than {MAX_YAML_BYTES:,} bytes; is it the right file?"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what} {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    return load_yaml_text(text, f"{what} {path}")
