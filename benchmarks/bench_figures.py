"""Benchmark: exporting the report's 21 figures in English and Japanese (SVG, PNG 2x, PDF).

Side by side in one process, interleaved and repeated:

* ``three renders`` (the peer: how figures were exported before): per figure and language, three
  fresh vl-convert renders of the Vega-Lite spec (``vegalite_to_svg``, ``vegalite_to_png``,
  ``vegalite_to_pdf``), each written atomically;
* ``save_chart, cold``: :func:`trainperf.report.charts.save_chart` into an empty folder: one SVG
  render per figure and language, PNG and PDF converted from that SVG;
* ``save_chart, unchanged``: the same call again on the folder it wrote: every file's content key
  matches, nothing is rendered or written.

The charts are built once beforehand from the bundled data (``figure_set.build``); building them is
not timed. Usage: ``python benchmarks/run_all.py --only figures`` (``--quick``: 4 figures, 1 round).
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

import altair as alt
import vl_convert as vlc

from trainperf.atomic import write_bytes_atomic
from trainperf.report import charts
from trainperf.report.charts.export import _vl_version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import figure_set  # noqa: E402
import harness  # noqa: E402


def _three_renders(charts_by_name: dict, outdir: Path, langs) -> None:
    langs, fonts, _ = charts.figure_languages(langs)
    vl = _vl_version()
    for name, chart in charts_by_name.items():
        with alt.theme.enable(charts.THEME), alt.data_transformers.enable("default", max_rows=None):
            base = chart.to_dict()
        for lang in langs:
            spec = charts.localize(base, lang, fonts.get(lang))
            target = outdir if lang == "en" else outdir / lang
            write_bytes_atomic(
                vlc.vegalite_to_svg(spec, vl_version=vl).encode(), target / f"{name}.svg"
            )
            write_bytes_atomic(
                vlc.vegalite_to_png(spec, scale=2, vl_version=vl), target / f"{name}.png"
            )
            write_bytes_atomic(vlc.vegalite_to_pdf(spec, vl_version=vl), target / f"{name}.pdf")


def _save_all(charts_by_name: dict, outdir: Path, langs) -> tuple[int, int]:
    written = skipped = 0
    for name, chart in charts_by_name.items():
        res = charts.save_chart(chart, name, outdir, langs=langs)
        written += len(res.written)
        skipped += len(res.skipped)
    return written, skipped


def run(quick: bool) -> list[harness.Row]:
    with tempfile.TemporaryDirectory(prefix="bench_figures_") as tmp:
        tmp = Path(tmp)
        figs = figure_set.build(tmp / "scratch")
        if quick:
            figs = dict(itertools.islice(figs.items(), 4))
        langs, _, note = charts.figure_languages(("en", "ja"), warn=False)
        n_files = len(figs) * len(langs) * 3
        counter = itertools.count()
        warm_dir = tmp / "warm"
        w, s = _save_all(figs, warm_dir, langs)  # the folder the unchanged re-runs find
        assert w == n_files and s == 0, (w, s)
        checks = []

        def warm():
            checks.append(_save_all(figs, warm_dir, langs))

        timings = harness.interleaved(
            {
                "three renders": lambda: _three_renders(figs, tmp / f"old{next(counter)}", langs),
                "save_chart, cold": lambda: _save_all(figs, tmp / f"new{next(counter)}", langs),
                "save_chart, unchanged": warm,
            },
            repeat=1 if quick else 3,
            warmup=0,
        )
        assert all(c == (0, n_files) for c in checks), checks  # the re-runs wrote nothing
    old = timings["three renders"]["median_s"]
    cold = timings["save_chart, cold"]["median_s"]
    same = timings["save_chart, unchanged"]["median_s"]
    what = f"{len(figs)} figures x {len(langs)} languages ({n_files} files)"
    extra = f" ({note})" if note else ""
    rows = [
        harness.Row(
            work=f"figure export, {what}, nothing exported yet",
            product=f"{cold:.1f} s (SVG once, PNG and PDF from it)",
            peer=f"three vl-convert renders per figure {old:.1f} s",
            ratio=cold / old,
            target="<= 0.6x the three renders",
            met=cold / old <= 0.6,
            note=f"medians of {len(timings['three renders']['runs'])} interleaved rounds; min "
            f"{timings['save_chart, cold']['min_s']:.1f} s vs {timings['three renders']['min_s']:.1f} s{extra}",
        ),
        harness.Row(
            work=f"figure export, {what}, re-run with nothing changed",
            product=f"{same:.2f} s (all {n_files} files skipped)",
            peer=f"three vl-convert renders per figure {old:.1f} s",
            ratio=same / old,
            target="<= 0.05x (skip, do not re-render)",
            met=same / old <= 0.05,
            note="content key per file: SHA-256 of the localised spec (data included), format, "
            "scale and vl-convert/Vega-Lite versions, checked against the file's own SHA-256",
        ),
    ]
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)
