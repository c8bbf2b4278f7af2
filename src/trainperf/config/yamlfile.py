"""YAML as the command line reads it (the cluster config, ``--params``, ``-p`` values): every
failure is a one-line :class:`~trainperf.errors.ConfigError` naming the file (or the ``-p``
parameter) and the line, never a ``UnicodeDecodeError`` or a PyYAML ``ParserError``.

PyYAML's ``safe_load`` keeps the last of two equal keys without a word (YAML 1.2 says keys are
unique, PyYAML does not check); :class:`UniqueKeyLoader` refuses the second one, naming it and its
line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainperf.errors import ConfigError

__all__ = ["UniqueKeyLoader", "load_yaml_file", "load_yaml_text"]


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping with the same key twice."""


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


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "not valid YAML"
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}not valid YAML ({problem})"


def load_yaml_text(text: str, where: str) -> Any:
    """Parse ``text`` as YAML (unique keys).

    Args:
        where: how the message names the text (``config FILE``, ``-p NB.PARAM``).

    Raises:
        ConfigError: ``{where}: line N: not valid YAML (...)`` or ``{where}: line N: duplicate key``.
    """
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: {_yaml_problem(exc)}") from None


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
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what} {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None
    text = text.removeprefix("\ufeff")
    return load_yaml_text(text, f"{what} {path}")
