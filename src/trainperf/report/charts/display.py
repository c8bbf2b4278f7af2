"""Charts in notebooks: displayed as static SVG (``image/svg+xml``), rendered by vl-convert.

Quarto adds require.js and jQuery from a CDN to every page embedding a notebook output of type
``text/html`` or ``application/javascript`` (quarto-cli ``src/core/jupyter/widgets.ts``), so a chart
display carries neither: its bundle is ``image/svg+xml`` (the chart as a real SVG element, drawn
with no script and no network) and ``text/plain``. No Vega bundle is inlined into the notebook.
"""

from __future__ import annotations

import altair as alt

from trainperf.report.charts.export import render_svg
from trainperf.report.charts.theme import THEME, theme

__all__ = ["enable", "renderer"]

MIME_SVG = "image/svg+xml"


def _title_text(spec: dict) -> str:
    title = spec.get("title", "")
    if isinstance(title, dict):
        title = title.get("text", "")
    if isinstance(title, list):
        title = " ".join(map(str, title))
    return str(title)


def renderer(spec: dict, **_meta) -> dict:
    """The ``trainperf`` Altair renderer: ``{"image/svg+xml": <svg>, "text/plain": <title>}``."""
    return {MIME_SVG: render_svg(spec), "text/plain": f"<Altair chart: {_title_text(spec)}>"}


def enable() -> None:
    """Register and enable the report's theme and SVG renderer (idempotent)."""
    alt.theme.register(THEME, enable=True)(theme)
    alt.renderers.register(THEME, renderer)
    alt.renderers.enable(THEME)
    alt.data_transformers.disable_max_rows()
