"""Work on pandoc's JSON AST: numbering of chapters, sections, figures and tables as a Quarto book
numbers them, cross-references, callouts, local images."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pypandoc

#: a notebook output shown as an image is a data URI (``data:image/svg+xml;base64,...``): 95 % of
#: the Markdown of the book's pages, which pandoc parsed and wrote out again for nothing (half of
#: its time). Pandoc sees a short token instead; the URI is put back into the HTML it writes.
_DATA_URI = re.compile(r"\((data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+)\)")
_TOKEN = re.compile(r"tpdata:[0-9a-f]{40}")
_DATA_URIS: dict[str, str] = {}  # token -> URI, from to_ast until release_data_uris


def _stash(m: re.Match) -> str:
    uri = m.group(1)
    token = "tpdata:" + hashlib.sha1(uri.encode("ascii")).hexdigest()
    _DATA_URIS[token] = uri
    return f"({token})"


def release_data_uris() -> None:
    """Forget the data URIs held for the pages converted so far (end of a site build)."""
    _DATA_URIS.clear()


def to_ast(markdown: str) -> dict:

    markdown = _DATA_URI.sub(_stash, markdown)
    return json.loads(pypandoc.convert_text(markdown, "json", format="markdown"))


#: classes of the notebook-output blocks (:mod:`trainperf.report.preview.pages`): no language.
#: Pandoc looks every class of a code block up as a syntax to highlight, and a class that names
#: none costs it ~0.5 s a process (skylighting's match of every syntax's file globs), on every
#: page; these blocks are written as the HTML pandoc writes for them instead.
_PLAIN_CODE_CLASSES = frozenset({"tp-output", "tp-error"})
_XML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"})


def _plain_code_blocks(node):
    """``node`` with each CodeBlock of :data:`_PLAIN_CODE_CLASSES` only (no id, no attributes)
    as the RawBlock of pandoc's own HTML for it: ``<pre class="c"><code>text</code></pre>``,
    text escaped as pandoc escapes it."""
    if isinstance(node, list):
        return [_plain_code_blocks(n) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("t") == "CodeBlock":
        (ident, classes, attrs), text = node["c"]
        if not ident and not attrs and classes and set(classes) <= _PLAIN_CODE_CLASSES:
            cls = " ".join(classes)
            html = f'<pre class="{cls}"><code>{text.translate(_XML_ESCAPES)}</code></pre>'
            return {"t": "RawBlock", "c": ["html", html]}
        return node
    return {k: _plain_code_blocks(v) if k == "c" else v for k, v in node.items()}


def to_html(doc: dict, bibliography: Path | None = None) -> str:
    """A page's AST as HTML. With ``bibliography`` (the book's ``references.bib``), citations
    ``[@key]`` are rendered by pandoc's citeproc, as Quarto renders them, after the
    cross-references were resolved (citeproc would take ``@tbl-x`` for a missing citation); a
    page's ``nocite`` metadata (the references page: ``@*``) lists every entry."""

    doc = {**doc, "blocks": _plain_code_blocks(doc["blocks"])}
    args = ["--mathml", "--wrap=none"]
    if bibliography is not None and bibliography.is_file():
        args += ["--citeproc", f"--bibliography={bibliography}", "--metadata=link-citations:true"]
    html = pypandoc.convert_text(json.dumps(doc), "html5", format="json", extra_args=args)
    return _TOKEN.sub(lambda m: _DATA_URIS.get(m.group(0), m.group(0)), html)


def _str(text: str) -> list:
    out = []
    for i, word in enumerate(text.split(" ")):
        if i:
            out.append({"t": "Space"})
        if word:
            out.append({"t": "Str", "c": word})
    return out


def _plain_text(inlines: list) -> str:
    out = []
    for el in inlines:
        t, c = el.get("t"), el.get("c")
        if t == "Str":
            out.append(c)
        elif t in ("Space", "SoftBreak", "LineBreak"):
            out.append(" ")
        elif t in (
            "Emph",
            "Strong",
            "SmallCaps",
            "Strikeout",
            "Underline",
            "Superscript",
            "Subscript",
        ):
            out.append(_plain_text(c))
        elif t in ("Span", "Link", "Quoted"):
            out.append(_plain_text(c[1]))
        elif t == "Code":
            out.append(c[1])
        elif t == "Math":
            out.append(c[1])
        elif t == "Cite":
            out.append(_plain_text(c[1]))
    return "".join(out)


def callouts(blocks: list) -> list:
    """Quarto callouts: a div ``.callout-*`` whose first block is a heading gets it as its title."""
    out = []
    for b in blocks:
        if b.get("t") == "Div":
            (ident, classes, kvs), inner = b["c"]
            kind = next((c for c in classes if c.startswith("callout-")), None)
            inner = callouts(inner)
            if kind:
                title = []
                if inner and inner[0].get("t") == "Header":
                    title = inner[0]["c"][2]
                    inner = inner[1:]
                if not title:
                    title = _str(kind.removeprefix("callout-").capitalize())
                head = {
                    "t": "Div",
                    "c": [
                        ["", ["callout-title"], []],
                        [{"t": "Plain", "c": [{"t": "Strong", "c": title}]}],
                    ],
                }
                body = {"t": "Div", "c": [["", ["callout-body"], []], inner]}
                b = {"t": "Div", "c": [[ident, ["callout", *classes], kvs], [head, body]]}
            else:
                b = {"t": "Div", "c": [[ident, classes, kvs], inner]}
        out.append(b)
    return out


_XREF_KINDS = {"fig": "Figure", "tbl": "Table", "sec": "Section"}


@dataclass
class Page:
    name: str  # html file stem
    source: Path
    appendix: bool
    blocks: list
    meta: dict = field(default_factory=dict)
    number: str | None = None  # "3", "A" or None (unnumbered)
    title: str = ""
    csv_files: dict[str, str] = field(default_factory=dict)  # site-relative path -> csv text
    part: str = ""  # the title of the book part this page opens ("" if none)


@dataclass
class Target:
    page: str
    kind: str  # fig, tbl, sec
    number: str | None
    level: int = 0  # headings: 1 chapter
    title: str = ""  # headings: their text (an unnumbered chapter is cited by its title)


def number_page(page: Page, index: dict[str, Target], warnings: list[str]) -> None:
    """Number the page's headings and floats, record its ids in ``index`` (first one wins, so
    chapters come before the appendix copies of the same cells)."""
    counters = [0, 0, 0, 0, 0, 0, 0]
    floats = {"fig": 0, "tbl": 0}
    chap = page.number

    def label(n: int, prefix: str | None) -> str:
        return f"{prefix}.{n}" if prefix else str(n)

    def record(ident: str, target: Target) -> None:
        if ident in index and index[ident].page == page.name:
            warnings.append(f"{page.source.name}: duplicate id #{ident}")
        index.setdefault(ident, target)

    def walk(blocks: list) -> None:
        for b in blocks:
            t = b.get("t")
            if t == "Header":
                level, (ident, classes, kvs), inlines = b["c"]
                if level == 1:
                    if not page.title:
                        page.title = _plain_text(inlines)
                    number = chap
                else:
                    number = None
                    if chap and "unnumbered" not in classes and level <= 4:
                        counters[level] += 1
                        for k in range(level + 1, len(counters)):
                            counters[k] = 0
                        number = ".".join([chap] + [str(counters[k]) for k in range(2, level + 1)])
                if number and "unnumbered" not in classes:
                    kvs = [kv for kv in kvs if kv[0] != "tp-number"] + [["tp-number", number]]
                    b["c"][1][2] = kvs
                if ident:
                    record(ident, Target(page.name, "sec", number, level, _plain_text(inlines)))
            elif t == "Figure":
                ident = b["c"][0][0]
                if ident.startswith("fig-"):
                    floats["fig"] += 1
                    num = label(floats["fig"], chap)
                    b["c"][0][2] = b["c"][0][2] + [["tp-number", num]]
                    record(ident, Target(page.name, "fig", num))
                walk(b["c"][2])
            elif t == "Div":
                (ident, classes, kvs), inner = b["c"]
                kind = ident.split("-", 1)[0] if "-" in ident else ""
                if "tp-float" in classes and kind in floats:
                    floats[kind] += 1
                    num = label(floats[kind], chap)
                    b["c"][0][2] = kvs + [["tp-number", num]]
                    record(ident, Target(page.name, kind, num))
                if "callout" not in classes:
                    walk(inner)
            elif t in ("BlockQuote",):
                walk(b["c"])

    walk(page.blocks)


def _ref_text(target: Target) -> str:
    if target.kind == "sec" and target.level == 1:
        if target.number is None:
            return target.title or "the preface"
        return ("Appendix " if target.number.isalpha() else "Chapter ") + target.number
    return f"{_XREF_KINDS[target.kind]} {target.number or '?'}"


def _number_of(kvs: list) -> str | None:
    return next((v for k, v in kvs if k == "tp-number"), None)


def resolve_xrefs(
    page: Page, index: dict[str, Target], warnings: list[str], local: dict[str, Target]
) -> None:
    """Headings and captions get their numbers, cross-references become links."""

    def link(ident: str, suppress: bool) -> list:
        target = local.get(ident) or index.get(ident)
        if target is None:
            warnings.append(f"{page.source.name}: unresolved cross-reference @{ident}")
            return [{"t": "Strong", "c": [{"t": "Str", "c": f"?@{ident}"}]}]
        text = target.number if (suppress and target.number) else _ref_text(target)
        href = ("" if target.page == page.name else f"{target.page}.html") + f"#{ident}"
        return [{"t": "Link", "c": [["", ["quarto-xref"], []], _str(text), [href, ""]]}]

    def inlines(items: list) -> list:
        out = []
        for el in items:
            t = el.get("t")
            if t == "Cite":
                cites = el["c"][0]
                ids = [c["citationId"] for c in cites]
                if all(i.split("-", 1)[0] in _XREF_KINDS and "-" in i for i in ids):
                    for k, c in enumerate(cites):
                        if k:
                            out += [{"t": "Str", "c": ","}, {"t": "Space"}]
                        out += inlines(c.get("citationPrefix", []))
                        out += link(c["citationId"], c["citationMode"]["t"] == "SuppressAuthor")
                        out += inlines(c.get("citationSuffix", []))
                    continue
            elif isinstance(el.get("c"), list):
                el = dict(el)
                el["c"] = _inlines_in(el["t"], el["c"], inlines, blocks)
            out.append(el)
        return out

    def prefix_caption(blocks_: list, text: str) -> list:
        for i, b in enumerate(blocks_):
            if b.get("t") in ("Plain", "Para"):
                new = dict(b)
                new["c"] = [
                    {"t": "Span", "c": [["", ["tp-float-number"], []], _str(text + ":")]},
                    {"t": "Space"},
                ] + b["c"]
                return blocks_[:i] + [new] + blocks_[i + 1 :]
        return [
            {"t": "Plain", "c": [{"t": "Span", "c": [["", ["tp-float-number"], []], _str(text)]}]}
        ] + blocks_

    def blocks(items: list) -> list:
        out = []
        for b in items:
            t = b.get("t")
            if t == "Header":
                level, (ident, classes, kvs), ins = b["c"]
                number = _number_of(kvs)
                ins = inlines(ins)
                if number:
                    if level == 1 and page.appendix:
                        lead = _str(f"Appendix {number} —")
                    else:
                        lead = [{"t": "Str", "c": number}]
                    ins = [
                        {"t": "Span", "c": [["", ["header-section-number"], []], lead]},
                        {"t": "Space"},
                    ] + ins
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                b = {"t": "Header", "c": [level, [ident, classes, kvs], ins]}
            elif t == "Figure":
                (ident, classes, kvs), (short, cap), body = b["c"]
                number = _number_of(kvs)
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                cap = blocks(cap)
                if number:
                    cap = prefix_caption(cap, f"Figure {number}")
                b = {"t": "Figure", "c": [[ident, classes, kvs], [short, cap], blocks(body)]}
            elif t == "Div":
                (ident, classes, kvs), inner = b["c"]
                number = _number_of(kvs)
                kvs = [kv for kv in kvs if kv[0] != "tp-number"]
                inner = blocks(inner)
                if number:
                    kind = _XREF_KINDS[ident.split("-", 1)[0]]
                    for i, sub in enumerate(inner):
                        if sub.get("t") == "Div" and "tp-caption" in sub["c"][0][1]:
                            inner[i] = {
                                "t": "Div",
                                "c": [sub["c"][0], prefix_caption(sub["c"][1], f"{kind} {number}")],
                            }
                            break
                    else:
                        cap = {
                            "t": "Div",
                            "c": [["", ["tp-caption"], []], prefix_caption([], f"{kind} {number}")],
                        }
                        inner = [cap] + inner if kind == "Table" else inner + [cap]
                b = {"t": "Div", "c": [[ident, classes, kvs], inner]}
            elif t in ("Para", "Plain"):
                b = {"t": t, "c": inlines(b["c"])}
            elif t == "BlockQuote":
                b = {"t": t, "c": blocks(b["c"])}
            elif t in ("BulletList",):
                b = {"t": t, "c": [blocks(item) for item in b["c"]]}
            elif t == "OrderedList":
                b = {"t": t, "c": [b["c"][0], [blocks(item) for item in b["c"][1]]]}
            elif t == "DefinitionList":  # the glossary: terms and their definitions
                b = {
                    "t": t,
                    "c": [[inlines(term), [blocks(d) for d in defs]] for term, defs in b["c"]],
                }
            elif t == "Table":
                b = _walk_table(b, inlines, blocks)
            out.append(b)
        return out

    page.blocks = blocks(page.blocks)


def _inlines_in(t: str, c: list, inlines, blocks):
    """Recurse into the inline content of an inline element (emphasis, spans, links, quotes)."""
    if t in ("Emph", "Strong", "SmallCaps", "Strikeout", "Underline", "Superscript", "Subscript"):
        return inlines(c)
    if t in ("Span", "Link", "Image"):
        return [c[0], inlines(c[1]), *c[2:]]
    if t == "Quoted":
        return [c[0], inlines(c[1])]
    if t == "Note":
        return blocks(c)
    return c


def _walk_table(b: dict, inlines, blocks) -> dict:
    attr, caption, colspecs, head, bodies, foot = b["c"]

    def rows(rs):
        return [
            [r[0], [[cell[0], cell[1], cell[2], cell[3], blocks(cell[4])] for cell in r[1]]]
            for r in rs
        ]

    head = [head[0], rows(head[1])]
    bodies = [[bd[0], bd[1], rows(bd[2]), rows(bd[3])] for bd in bodies]
    foot = [foot[0], rows(foot[1])]
    return {
        "t": "Table",
        "c": [attr, [caption[0], blocks(caption[1])], colspecs, head, bodies, foot],
    }


def rewrite_targets(blocks: list, image=None, link=None) -> None:
    """Rewrite in place the ``src`` of images with ``image(src)`` and the target of links with
    ``link(target)`` (either None: left as they are), wherever they are in the AST (paragraphs,
    figure and table captions, table cells, notes)."""

    def walk(node) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            t, c = node.get("t"), node.get("c")
            fn = image if t == "Image" else link if t == "Link" else None
            if fn is not None:
                c[2][0] = fn(c[2][0])
            if c is not None:
                walk(c)

    walk(blocks)
