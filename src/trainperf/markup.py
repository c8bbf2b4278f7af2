"""Untrusted text (a config's ``name`` and ``description``, file names, job names) made safe for the
places it reaches a page: Markdown prose (the book's chapters through ``values.yml`` and
``{{< meta >}}``, notebooks' Markdown outputs, the preview site) and HTML.

Safe by construction, not by the current behaviour of a renderer:

* every ASCII punctuation character is backslash-escaped (pandoc's ``all_symbols_escapable``):
  no emphasis, link, raw HTML, autolink, math, cross-reference (``@sec-x``), span or footnote can
  start from the text;
* a word joiner (U+2060, zero width, invisible) follows every ``{`` and precedes every ``}``, so
  the text never holds ``{{`` or ``}}``: no Quarto shortcode (``{{< include /etc/passwd >}}``,
  ``{{% ... %}}``) can form, whether a renderer looks for them in the source text, after the
  escapes are read, or in a value inserted by another shortcode;
* line breaks become spaces (no block structure: headings, lists, fenced divs).
"""

from __future__ import annotations

import html
import re

__all__ = ["WORD_JOINER", "html_text", "md_code", "md_text"]

WORD_JOINER = "\u2060"
"""Zero-width, no-break: splits ``{{`` without a visible trace."""

_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
_SPACE = re.compile(r"[\s\u2028\u2029]+")


def _break_braces(text: str) -> str:
    return text.replace("{", "{" + WORD_JOINER).replace("}", WORD_JOINER + "}")


def md_text(value: object) -> str:
    """``value`` as Markdown inline text that shows exactly its characters (see the module)."""
    text = _SPACE.sub(" ", str(value)).strip()
    return _break_braces(_PUNCT.sub(r"\\\1", text))


def md_code(value: object) -> str:
    """``value`` as a Markdown inline code span: a backtick fence longer than any run of backticks
    in it, braces broken as in :func:`md_text` (a code span cannot hold escapes)."""
    text = _break_braces(_SPACE.sub(" ", str(value)).strip())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if text else ""


def html_text(value: object) -> str:
    """``value`` as HTML text or attribute content (``&<>"'`` escaped, braces broken)."""
    return _break_braces(html.escape(str(value), quote=True))
