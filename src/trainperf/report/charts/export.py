"""Figure export: one SVG render per figure and language, PNG and PDF derived from it, unchanged ones skipped.

vl-convert renders a Vega-Lite spec to SVG (``vegalite_to_svg``); ``svg_to_png`` and ``svg_to_pdf``
rasterise and convert that SVG with the same engine (resvg / svg2pdf) that ``vegalite_to_png`` and
``vegalite_to_pdf`` use internally after their own SVG render, so deriving both from the one SVG gives
the same pictures for a third of the rendering work.

Every figure file gets a content key: the SHA-256 of the localised spec (data included), the format,
the PNG scale and the vl-convert and Vega-Lite versions. Keys and the SHA-256 of each written file are
kept in a hidden sidecar beside the figure (``<outdir>/.<name>.export.json``); a figure whose key and
file are unchanged is not rendered or written again. Each export is reported to
``$TRAINPERF_FIGURE_LOG`` (JSON lines, when set; the main job prints a summary from it) and to
:data:`EXPORTS` in this process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from pathlib import Path

import altair as alt
import vl_convert as vlc
from altair.utils._importers import vl_version_for_vl_convert

from trainperf.atomic import write_bytes_atomic, write_text_atomic
from trainperf.report.charts.fonts import LANGS_ENV, figure_languages
from trainperf.report.charts.i18n import LABEL_SUFFIX, localize
from trainperf.report.charts.memory import replace_labels
from trainperf.report.charts.theme import THEME

__all__ = [
    "EXPORTS",
    "job_environment",
    "FORMATS",
    "SPEC_SIDECAR",
    "projector_spec",
    "Exported",
    "export_key",
    "read_export_log",
    "render_svg",
    "save_chart",
    "summarize_exports",
]

FORMATS = ("svg", "png", "pdf")
#: Bump when the export pipeline changes what it writes for the same spec (invalidates every key).
PIPELINE_VERSION = "svg-once-1"
SIDECAR = ".{name}.export.json"
#: The localised Vega-Lite spec of each exported figure, beside it (hidden), so that a figure can be
#: rendered again at another text size (the talk's projector figures, talk/prepare.py) without
#: running its notebook. Specs larger than :data:`SPEC_SIDECAR_MAX_BYTES` (dense heatmaps) are not
#: kept.
SPEC_SIDECAR = ".{name}.vl.json"
SPEC_SIDECAR_MAX_BYTES = 4_000_000
LOG_ENV = "TRAINPERF_FIGURE_LOG"


class Exported(list):
    """The figure files of one :func:`save_chart` call (a list of paths), and what was done.

    Attributes:
        written: files rendered and written by this call.
        skipped: files left as they were: spec, data, language and format unchanged.
        languages_skipped: one line per language that could not be written (e.g. no CJK font).
    """

    def __init__(self):
        super().__init__()
        self.written: list[Path] = []
        self.skipped: list[Path] = []
        self.languages_skipped: list[str] = []


#: Every export of this process: dicts with name, lang, outdir, written, skipped (formats), seconds.
EXPORTS: list[dict] = []


def _vl_version() -> str:
    return vl_version_for_vl_convert()


_ID = re.compile(r'\bid="([^"]+)"')


def _scope_ids(svg: str) -> str:
    """Make the SVG's element ids deterministic and unique to its content.

    vl-convert numbers gradients and clip paths with counters that run on across renders of one
    process, and restarts them in every figure: the same chart would get other ids on a second
    render, and two charts inlined in one HTML page could share one. Ids are renumbered in order of
    appearance and prefixed with a hash of the renumbered SVG.
    """
    ids = list(dict.fromkeys(_ID.findall(svg)))
    if not ids:
        return svg
    alternation = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
    pat = re.compile(rf'(\bid="|url\(#|href="#)({alternation})(?=["\)])')
    number = {old: f"i{k}" for k, old in enumerate(ids)}
    plain = pat.sub(lambda m: m.group(1) + number[m.group(2)], svg)
    prefix = "tp" + hashlib.sha256(plain.encode("utf-8")).hexdigest()[:10] + "-"
    renum = re.compile(r'(\bid="|url\(#|href="#)(i\d+)(?=["\)])')
    return renum.sub(lambda m: m.group(1) + prefix + m.group(2), plain)


#: the last SVGs rendered in this process, by :func:`spec_digest` (most recent last): a notebook
#: exports a chart and then displays it, and the display's spec is the English export's spec, so
#: the display is not rendered a second time (half of the renders of a main-job run)
_SVG_CACHE: OrderedDict[str, str] = OrderedDict()
_SVG_CACHE_SIZE = 4


def _remember_svg(digest: str, svg: str) -> None:
    _SVG_CACHE[digest] = svg
    _SVG_CACHE.move_to_end(digest)
    while len(_SVG_CACHE) > _SVG_CACHE_SIZE:
        _SVG_CACHE.popitem(last=False)


def render_svg(spec: dict, digest: str | None = None) -> str:
    """The SVG of a Vega-Lite ``spec`` (vl-convert, no browser, no network), element ids scoped.

    ``digest``: :func:`spec_digest` of ``spec`` when the caller has it. A spec rendered lately in
    this process (the last :data:`_SVG_CACHE_SIZE`) is not rendered again: the same SVG is returned.
    """

    digest = digest or spec_digest(spec)
    svg = _SVG_CACHE.get(digest)
    if svg is None:
        svg = _scope_ids(vlc.vegalite_to_svg(spec, vl_version=_vl_version()))
    _remember_svg(digest, svg)
    return svg


def _canonical(spec) -> bytes:
    return json.dumps(
        spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    ).encode()


def export_key(spec: dict | str, fmt: str, scale: float = 2.0) -> str:
    """Content key of one figure file: SHA-256 over the localised spec, format, scale and versions.

    ``spec`` may be given as :func:`spec_digest` of the spec (hashed once for all formats).
    """

    digest = spec if isinstance(spec, str) else spec_digest(spec)
    extra = f"{digest}|{fmt}|{scale if fmt == 'png' else ''}|{vlc.__version__}|{_vl_version()}|{PIPELINE_VERSION}"
    return hashlib.sha256(extra.encode()).hexdigest()


def spec_digest(spec: dict) -> str:
    """SHA-256 of a spec: its canonical JSON (sorted keys, no whitespace), data included.

    A top-level dataset named by Altair (``data-<hash>``) is already named by the SHA-256 of its
    records (``altair.vegalite.v6.api._dataset_name``), so its name stands for its records, unless
    it has ``*_label`` columns (translated after naming: those records are hashed). This keeps the
    check of an unchanged 27,000-cell heatmap from serialising its data twice.
    """

    datasets = spec.get("datasets") or {}
    h = hashlib.sha256(_canonical({k: v for k, v in spec.items() if k != "datasets"}))
    for name in sorted(datasets):
        records = datasets[name]
        h.update(b"\0" + name.encode())
        first = records[0] if records and isinstance(records[0], dict) else {}
        if not name.startswith("data-") or any(k.endswith(LABEL_SUFFIX) for k in first):
            h.update(_canonical(records))
    return h.hexdigest()


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _read_sidecar(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data.get("formats", {}) if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _convert(svg: str, fmt: str, scale: float) -> bytes:

    if fmt == "svg":
        return svg.encode("utf-8")
    if fmt == "png":
        return vlc.svg_to_png(svg, scale=scale)
    return vlc.svg_to_pdf(svg)


def _export_one(
    spec: dict, name: str, outdir: Path, formats: tuple[str, ...], scale: float, force: bool
):
    sidecar = outdir / SIDECAR.format(name=name)
    known = {} if force else _read_sidecar(sidecar)
    digest = spec_digest(spec)
    keys = {fmt: export_key(digest, fmt, scale) for fmt in formats}
    paths = {fmt: outdir / f"{name}.{fmt}" for fmt in formats}
    stale = [
        fmt
        for fmt in formats
        if known.get(fmt, {}).get("key") != keys[fmt]
        or known.get(fmt, {}).get("sha256") != _sha(paths[fmt])
    ]
    _write_spec_sidecar(spec, outdir / SPEC_SIDECAR.format(name=name))
    if not stale:
        return [], list(formats)
    svg_path = outdir / f"{name}.svg"
    old_svg = known.get("svg", {})
    if old_svg.get("key") == export_key(digest, "svg", scale) and old_svg.get("sha256") == _sha(
        svg_path
    ):
        svg = svg_path.read_text(encoding="utf-8")  # the SVG is current: derive the others from it
        _remember_svg(digest, svg)
    else:
        svg = render_svg(spec, digest)
    record = dict(known)
    for fmt in stale:
        data = _convert(svg, fmt, scale)
        write_bytes_atomic(data, paths[fmt])
        record[fmt] = {"key": keys[fmt], "sha256": hashlib.sha256(data).hexdigest()}
    write_text_atomic(json.dumps({"formats": record}, indent=1, sort_keys=True), sidecar)
    return stale, [f for f in formats if f not in stale]


def _write_spec_sidecar(spec: dict, path: Path) -> None:
    """Keep ``spec`` as JSON at ``path`` unless it is there already or too large."""
    text = json.dumps(spec, ensure_ascii=False, sort_keys=True, default=str)
    if len(text.encode()) > SPEC_SIDECAR_MAX_BYTES:
        return
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(text, path)


#: Vega-Lite defaults of the text sizes a spec may leave unset (vega-lite src/config.ts, vega's
#: defaults: axis labels 10 px, axis titles 11, legend labels 10 and titles 11, chart title 13,
#: subtitle 10, text marks 11), set before they are scaled.
_DEFAULT_SIZES = {
    "axis": {"labelFontSize": 10, "titleFontSize": 11},
    "legend": {"labelFontSize": 10, "titleFontSize": 11},
    "header": {"labelFontSize": 10, "titleFontSize": 11},
    "title": {"fontSize": 13, "subtitleFontSize": 10},
    "text": {"fontSize": 11},
}
_SIZE_KEYS = {"fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize"}
_LENGTH_KEYS = {"labelLimit", "titleLimit", "subtitlePadding", "titlePadding", "labelPadding"}


def _two_lines(title: str, longest: int = 20) -> str | list[str]:
    """``title`` as two lines broken at the space nearest its middle when it is longer than
    ``longest`` characters and has a space; otherwise as it is."""
    spaces = [i for i, c in enumerate(title) if c == " "]
    if len(title) <= longest or not spaces:
        return title
    cut = min(spaces, key=lambda i: abs(i - len(title) / 2))
    return [title[:cut], title[cut + 1 :]]


def projector_spec(
    spec: dict,
    factor: float,
    width: float = 1.0,
    height: float = 1.0,
    legend_right: bool = False,
    stack: bool = False,
    legend_row: bool = False,
) -> dict:
    """``spec`` with every text size (and the room text is given: label and title limits,
    paddings, legend symbols) multiplied by ``factor``, its plots' widths by ``width`` and heights by
    ``height``, and with ``legend_right`` its bottom legends moved to the right: the same chart laid
    out for a projected 16:9 slide (the talk). Presentation only: no datum changes but the
    positions of labels the chart placed for its own size, placed again for the new one
    (:func:`trainperf.report.charts.memory.replace_labels`). With ``stack``, panels side by side
    (``hconcat``) are put one above the other (``vconcat``): two wide panels on a wide slide. With
    ``legend_row`` (and no ``legend_right``) a bottom legend lists its entries in one row, so that
    it takes neither the plot's width nor much height. The rows (or columns) of a banded axis
    (``{"step": n}``) grow with the text, never less: a label per bar stays readable.

    Args:
        spec: a Vega-Lite spec (e.g. the JSON :func:`save_chart` keeps as :data:`SPEC_SIDECAR`).
        factor, width, height: > 0; all 1 (and no ``legend_right``) return an equal copy.
    """
    if min(factor, width, height) <= 0:
        raise ValueError(f"factors must be positive, not {(factor, width, height)!r}")
    out = json.loads(json.dumps(spec))
    config = out.setdefault("config", {})
    for part, sizes in _DEFAULT_SIZES.items():
        block = config.setdefault(part, {})
        for key, value in sizes.items():
            block.setdefault(key, value)
    # the size of a plot that sets none (Vega-Lite's continuous defaults, or the theme's)
    view = config.setdefault("view", {})
    for key, factor_of in (("continuousWidth", width), ("continuousHeight", height)):
        view[key] = round(view.get(key, 200 if key == "continuousHeight" else 300) * factor_of, 2)
    if stack and "hconcat" in out:
        out["vconcat"] = out.pop("hconcat")

    plot = {"width": width, "height": height}

    def walk(node, parent=None):
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("data", "datasets", "values"):
                    continue
                if key in _SIZE_KEYS | _LENGTH_KEYS and isinstance(value, (int, float)):
                    node[key] = round(value * factor, 2)
                elif key == "symbolSize" and isinstance(value, (int, float)):
                    node[key] = round(value * factor * factor, 2)  # an area
                elif key in plot and parent not in ("mark", "encoding", "title", "legend"):
                    if isinstance(value, (int, float)):  # a view's size, not a mark's
                        node[key] = round(value * plot[key], 2)
                    elif isinstance(value, dict) and isinstance(value.get("step"), (int, float)):
                        # a band holds a label: it grows as the text does (Vega hides a label
                        # that would overlap its neighbour, so a bar would lose its name)
                        value["step"] = round(value["step"] * max(plot[key], factor), 2)
                elif key == "title" and parent == "y" and stack and isinstance(value, str):
                    node[key] = _two_lines(value)  # a stacked panel is low: a long title in two
                elif key == "legend" and legend_right and isinstance(value, dict):
                    if value.get("orient") == "bottom":
                        value["orient"] = "right"
                        value.pop("columns", None)
                        value.pop("direction", None)
                    walk(value, key)
                elif key == "legend" and legend_row and isinstance(value, dict):
                    if value.get("orient", "bottom") == "bottom":
                        value["direction"] = "horizontal"
                        value.pop("columns", None)
                    walk(value, key)
                else:
                    walk(value, key)
        elif isinstance(node, list):
            for item in node:
                walk(item, parent)

    walk(out)
    # labels placed in pixels for the book's size (the memory wall) are placed again for this one
    return replace_labels(out)


def save_chart(
    chart: alt.TopLevelMixin,
    name: str,
    outdir: str | Path,
    formats: Iterable[str] = FORMATS,
    scale: float = 2.0,
    langs: Iterable[str] | None = None,
    *,
    force: bool = False,
) -> Exported:
    """Export ``chart`` as ``<outdir>/<name>.<fmt>`` and ``<outdir>/<lang>/<name>.<fmt>``.

    English figures go to ``outdir``, every other language to ``outdir/<lang>/`` with its labels
    translated, its locale and its font (:func:`trainperf.report.charts.i18n.localize`). Per figure
    and language the SVG is rendered once and PNG (``scale`` x) and PDF are derived from it; a file
    whose content key is unchanged (same spec, data, language, format, scale and vl-convert) and whose
    bytes are as written is skipped. Japanese is skipped, with one warning, when no CJK font is
    installed (:func:`trainperf.report.charts.fonts.figure_languages`): never a figure without text.

    Args:
        chart: an Altair chart.
        name: stable file stem, e.g. ``mlperf_time_to_train_gpt3``.
        outdir: target folder, created if missing.
        formats: any of ``svg``, ``png``, ``pdf``.
        scale: PNG scale factor (2x by default).
        langs: figure languages; None: ``$TRAINPERF_FIGURE_LANGS`` or English and Japanese.
        force: render and write every file even if unchanged.

    Returns:
        :class:`Exported`: the figure's files (written now or up to date), with ``written``,
        ``skipped`` and ``languages_skipped``. Files are written to a temporary name and renamed.

    Raises:
        ValueError: an unknown format or language.
    """
    formats = tuple(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ValueError(f"unknown figure format {bad[0]!r}; expected svg, png or pdf")
    langs, fonts, note = figure_languages(langs)
    # the report's theme and no row limit (figures embed all their data), whatever is enabled
    # validate=False: Altair's JSON-schema validation costs more than the export check itself (the
    # notebooks' display of the same chart validates it; vl-convert rejects an invalid spec anyway)
    with alt.theme.enable(THEME), alt.data_transformers.enable("default", max_rows=None):
        base = chart.to_dict(validate=False)
    result = Exported()
    if note:
        result.languages_skipped.append(note)
    for lang in langs:
        t0 = time.perf_counter()
        spec = localize(base, lang, fonts.get(lang))
        target = Path(outdir) if lang == "en" else Path(outdir) / lang
        written, skipped = _export_one(spec, name, target, formats, scale, force)
        for fmt in formats:
            path = target / f"{name}.{fmt}"
            result.append(path)
            (result.written if fmt in written else result.skipped).append(path)
        _report(
            {
                "name": name,
                "lang": lang,
                "outdir": str(target),
                "written": written,
                "skipped": skipped,
                "seconds": round(time.perf_counter() - t0, 3),
                "note": note,
            }
        )
    return result


def _report(rec: dict) -> None:
    EXPORTS.append(rec)
    log = os.environ.get(LOG_ENV)
    if log:
        try:
            with open(log, "a", encoding="utf-8") as fh:  # one short line per export, appended
                fh.write(json.dumps(rec) + "\n")
        except OSError:
            pass  # progress reporting never fails an export


def read_export_log(path: str | Path) -> list[dict]:
    """The records of an export log (see :data:`LOG_ENV`); a missing file gives []."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def summarize_exports(records: list[dict]) -> str:
    """One progress line: which figures were exported and which were unchanged and skipped.

    Example: ``figures: exported eos_x (en, ja); unchanged, skipped: memory_wall (en, ja)``.
    """
    if not records:
        return ""
    done: dict[str, list[str]] = {}
    same: dict[str, list[str]] = {}
    for r in records:
        (done if r.get("written") else same).setdefault(r["name"], []).append(r["lang"])

    def fmt(d):
        return ", ".join(f"{n} ({', '.join(ls)})" for n, ls in d.items())

    parts = []
    if done:
        parts.append(f"exported {fmt(done)}")
    if same:
        parts.append(f"unchanged, skipped: {fmt(same)}")
    return "figures: " + "; ".join(parts)


@contextlib.contextmanager
def job_environment(log_path: str | Path, langs: Iterable[str]) -> Iterator[None]:
    """Environment of the notebook kernels the main job starts, restored afterwards.

    Sets ``$TRAINPERF_FIGURE_LOG`` (so that each :func:`save_chart` in a kernel appends its record to
    ``log_path``) and ``$TRAINPERF_FIGURE_LANGS`` (the languages the main job found fonts for, after
    saying in one line why any was skipped: the kernels then skip it without repeating that).
    """

    new = {LOG_ENV: str(log_path), LANGS_ENV: ",".join(langs)}
    old = {k: os.environ.get(k) for k in new}
    os.environ.update(new)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
