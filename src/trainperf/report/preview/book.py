"""The book's structure from ``_quarto.yml``: chapters and appendices, in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class BookStructure:
    """The book as ``_quarto.yml`` lists it: chapter files and appendix files (absolute paths)."""

    chapters: list[Path]
    appendices: list[Path]
    parts: dict[Path, str] | None = None  # first chapter of each part -> the part's title


def _flatten(entries) -> list[str]:
    out = []
    for entry in entries or []:
        if isinstance(entry, dict):
            out.extend(_flatten(entry.get("chapters", [])))
        else:
            out.append(str(entry))
    return out


def book_structure(root: str | Path) -> BookStructure:
    """Chapters and appendices of ``_quarto.yml`` (``book.chapters``, ``book.appendices``; parts
    flattened), in book order."""

    root = Path(root)
    cfg = yaml.safe_load((root / "_quarto.yml").read_text(encoding="utf-8")) or {}
    book = cfg.get("book", {}) or {}
    parts = {}
    for entry in book.get("chapters") or []:
        if isinstance(entry, dict) and entry.get("part") and _flatten(entry.get("chapters", [])):
            parts[root / _flatten(entry["chapters"])[0]] = str(entry["part"])
    return BookStructure(
        [root / c for c in _flatten(book.get("chapters"))],
        [root / c for c in _flatten(book.get("appendices"))],
        parts,
    )


def book_chapters(root: str | Path) -> list[Path]:
    """The chapter files of the book, in ``_quarto.yml`` order (appendices not included)."""
    return book_structure(root).chapters
