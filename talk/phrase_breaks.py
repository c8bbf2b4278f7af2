"""Break the Japanese deck's slide text by phrase: ``<wbr>`` at BudouX phrase boundaries.

Japanese has no spaces between words, so a browser may break a line between any two characters
(性/能評価, アクセラ/レータ). The deck's CSS sets ``word-break: keep-all`` for Japanese, which
forbids those breaks, and this script marks where a line may break instead: between the phrases
(bunsetsu) that BudouX's default Japanese model finds (https://github.com/google/budoux, the
``budoux`` PyPI package). Run it after editing ``talk/index.qmd``::

    python talk/phrase_breaks.py talk/index.qmd          # rewrite in place
    python talk/phrase_breaks.py --check talk/index.qmd  # exit 1 when the file is not up to date

Only slide text is touched: headings, paragraphs, list items and table cells that contain Japanese,
and the double-quoted ``title`` and ``subtitle`` of the YAML front matter (the title slide). The rest
of the front matter, speaker notes (``::: {.notes}``), fenced code, images, div fences and HTML
comments are left as they are, and so are shortcodes (``{{< meta ... >}}``), inline code, HTML tags,
links and attribute blocks inside a line. A ``<wbr>`` is placed only between two visible characters
that are not markdown punctuation, so emphasis and links parse as before. The script is
idempotent: it removes the ``<wbr>`` it finds in slide text and inserts them again.

BudouX is a small pure-Python package not needed by the library, so it is imported here only; the
deck itself stores the result (the tests compare the file with this script's output where BudouX is
installed).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

WBR = "<wbr>"
JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")
# spans that are never split: shortcodes, inline code, HTML tags, links/images, attribute blocks
PROTECTED = re.compile(
    r"\{\{<.*?>\}\}"  # Quarto shortcode
    r"|`[^`]*`"  # inline code
    r"|<[^>]+>"  # HTML tag (including <wbr> itself, stripped before)
    r"|!?\[[^\]]*\]\([^)]*\)"  # link or image
    r"|\{[^}]*\}"  # attribute block
)
# never next to a break: whitespace (already a break) and markdown punctuation
NO_BREAK_NEXT_TO = set(" \t*_[](){}<>`|\\~^")
# never at the start of a line (closing punctuation) or at its end (opening brackets)
NO_BREAK_BEFORE = set(":;,.!?%、。，．：；！？）」』】〕・ー〜")
NO_BREAK_AFTER = set("「『【〔（")
KANJI = re.compile(r"[\u3400-\u9fff々]")
KATAKANA = re.compile(r"[\u30a0-\u30ffー]")


# Compound particles read as one word; BudouX's model may split them (ベンチマークに/よる).
COMPOUNDS = ("による", "によって", "について", "にとって", "に対して", "に関する", "として")


def _in_compound(before: str, after: str) -> bool:
    """Whether the boundary between the texts ``before`` and ``after`` falls inside a compound."""
    for c in COMPOUNDS:
        for k in range(1, len(c)):
            if before.endswith(c[:k]) and after.startswith(c[k:]):
                return True
    return False


def may_break(before: str, after: str) -> bool:
    """Whether a line may break between the characters ``before`` and ``after``. BudouX's model
    sometimes splits a kanji compound (集団通/信); a break is never placed inside a run of kanji
    or of katakana, which is a word (性能評価, アクセラレータ)."""
    if before in NO_BREAK_NEXT_TO or after in NO_BREAK_NEXT_TO:
        return False
    if after in NO_BREAK_BEFORE or before in NO_BREAK_AFTER:
        return False
    if KANJI.match(before) and KANJI.match(after):
        return False
    return not (KATAKANA.match(before) and KATAKANA.match(after))


def _parser():
    try:
        import budoux
    except ImportError:  # one clear line, not a traceback
        sys.exit("phrase_breaks: the budoux package is not installed (pip install budoux)")
    return budoux.load_default_japanese_parser()


def break_text(text: str, parse) -> str:
    """``text`` with ``<wbr>`` between the phrases ``parse`` (str -> list[str]) finds, outside
    protected spans; ``<wbr>`` already in ``text`` are removed first."""
    text = text.replace(WBR, "")
    out, pos = [], 0
    for m in list(PROTECTED.finditer(text)) + [None]:
        end = m.start() if m else len(text)
        chunk = text[pos:end]
        if JAPANESE.search(chunk):
            phrases = parse(chunk)
            joined, plain = (phrases[0], phrases[0]) if phrases else ("", "")
            for p in phrases[1:]:
                if plain and p and may_break(plain[-1], p[0]) and not _in_compound(plain, p):
                    joined += WBR
                joined += p
                plain += p
            chunk = joined
        out.append(chunk)
        if m:
            out.append(m.group(0))
            pos = m.end()
    return "".join(out)


def slide_text_lines(lines: list[str]):
    """Indices of the lines of a qmd that are slide text (see the module docstring)."""
    in_front = lines[:1] == ["---"]
    in_code = False
    notes_depth = 0  # fence depth of an open ::: {.notes}
    depth = 0
    for i, line in enumerate(lines):
        s = line.strip()
        if in_front:
            if i > 0 and s == "---":
                in_front = False
            continue
        if s.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if s.startswith(":::"):
            if s == ":::" or re.fullmatch(r":::+", s):
                if notes_depth and depth == notes_depth:
                    notes_depth = 0
                depth -= 1
            else:
                depth += 1
                if ".notes" in s:
                    notes_depth = depth
            continue
        if notes_depth or not s or s.startswith(("![", "<!--")) or not JAPANESE.search(s):
            continue
        yield i


FRONT_TITLE = re.compile(r'^((?:title|subtitle):\s*")(.*)("\s*)$')


def apply(text: str, parse) -> str:
    """The qmd ``text`` with its slide text, and the title and subtitle of its front matter (the
    title slide), broken by phrase."""
    lines = text.split("\n")
    if lines[:1] == ["---"]:
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                break
            m = FRONT_TITLE.match(lines[i])
            if m and JAPANESE.search(m.group(2)):
                lines[i] = m.group(1) + break_text(m.group(2), parse) + m.group(3)
    for i in slide_text_lines(lines):
        line = lines[i]
        m = re.match(r"^(\s*(?:#+\s+|[-*+]\s+|\d+\.\s+|\|\s*)?)(.*)$", line)
        lines[i] = m.group(1) + break_text(m.group(2), parse)
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("qmd", type=Path)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is not up to date")
    args = ap.parse_args(argv)
    text = args.qmd.read_text(encoding="utf-8")
    new = apply(text, _parser().parse)
    if args.check:
        if new != text:
            print(
                f"phrase_breaks: {args.qmd} is not broken by phrase; run talk/phrase_breaks.py {args.qmd}"
            )
            return 1
        return 0
    if new != text:
        tmp = args.qmd.with_suffix(args.qmd.suffix + ".tmp")
        tmp.write_text(new, encoding="utf-8")
        tmp.replace(args.qmd)  # atomic
    return 0


if __name__ == "__main__":
    sys.exit(main())
