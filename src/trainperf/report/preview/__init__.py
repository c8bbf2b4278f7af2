"""The preview site: the book's chapters and its notebook appendix as static HTML, without Quarto.

Built on pandoc itself (the ``pypandoc-binary`` wheel ships pandoc 3.9, the engine Quarto drives),
so that what Quarto would hand to pandoc is parsed by pandoc here too: fenced divs, attributes,
pipe tables, figures, callouts and TeX math (written as MathML, which browsers render without any
script). What Quarto adds on top of pandoc is done here on pandoc's JSON AST, in Python:

* the book's structure from ``_quarto.yml`` (``book.chapters``, ``book.appendices``);
* shortcodes, resolved in the text before pandoc reads it, as Quarto does:
  ``{{< include >}}``, ``{{< meta values.* >}}`` (the generated numbers) and
  ``{{< embed NB.ipynb#label >}}`` (the labelled cell's stored outputs, chosen by Quarto's MIME
  priority for HTML, ``src/core/jupyter/display-data.ts``, with its ``tbl-cap``/``fig-cap``);
* numbering: chapters 1, 2, ... (a chapter whose title has ``{.unnumbered}`` is not numbered),
  appendices A, B, ..., sections 3.1 and 3.1.2, figures and tables per chapter (Figure 3.2,
  Table A.1), as a Quarto book numbers them;
* cross-references: ``@sec-x``, ``@fig-x``, ``@tbl-x`` (pandoc reads them as citations) become
  links to the target page and id with the text "Chapter 3", "Section 3.1", "Figure 3.2",
  "Table 3.1" or "Appendix A"; an unknown id shows as ``?@fig-x`` and is reported;
* callouts (``::: {.callout-warning}``) get their first heading as the title, unnumbered;
* conditional content on metadata, ``::: {.content-visible when-meta="values.inputs.telemetry"}``
  and ``.content-hidden`` (``when-meta`` / ``unless-meta``, a true value shows or hides it), kept
  or dropped before the shortcodes are resolved (a hidden part may quote values that were not
  recorded).

Appendix pages are the executed notebooks (as in ``_quarto.yml``, where the appendices are the
executed ``.ipynb`` files): markdown cells as text, code folded under "Code", every output, and
under each table a link to its full-detail CSV (the ``text/csv`` output of
:func:`trainperf.report.display.table`).

Nothing on the pages is fetched from the network: figures are copied next to the pages, notebook
images are data URIs, math is MathML, the stylesheet is inline.

Modules: :mod:`~trainperf.report.preview.book` (the book's structure), :mod:`~trainperf.report.preview.pages`
(chapters and notebooks as Markdown), :mod:`~trainperf.report.preview.xref` (numbering and
cross-references on pandoc's AST), :mod:`~trainperf.report.preview.site` (the site),
:mod:`~trainperf.report.preview.offline` (network checks).
"""

from __future__ import annotations

from trainperf.report.preview.book import BookStructure, book_chapters, book_structure
from trainperf.report.preview.offline import external_urls, network_loads
from trainperf.report.preview.pages import (
    CsvOutput,
    chapter_markdown,
    csv_outputs,
    notebook_markdown,
)
from trainperf.report.preview.site import build_preview_site

__all__ = [
    "BookStructure",
    "book_chapters",
    "book_structure",
    "CsvOutput",
    "build_preview_site",
    "chapter_markdown",
    "csv_outputs",
    "external_urls",
    "network_loads",
    "notebook_markdown",
]
