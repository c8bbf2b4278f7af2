"""The case study's ratio table says what each ratio rests on (issue 39: measured comparisons
first, the unconfirmed and extrapolated ones marked everywhere they appear).

Expected rows, from data/reference/published_results.csv and the bundled Eos logs: SAKURAONE's
64-node GPT-3 time, 58.30 min, equals Eos's v3.1 64-node score (58.302 min recomputed from its
logs), so that ratio is unconfirmed; its 96-node ratio is against Eos v4.1's 64-node time scaled
linearly to 96 nodes (no Eos v4.1 96-node run), an extrapolated reference; 32 nodes and the LoRA
rows are against measured Eos v4.1 runs.
"""

from __future__ import annotations

import warnings

import polars as pl
from helpers import MLPERF, notebook_cell
from IPython.display import Markdown

from trainperf import compare, mlperf
from trainperf.markup import md_text
from trainperf.report.display import Col
from trainperf.report.display import table as show_table


def test_the_ratio_table_names_the_basis_of_every_ratio():
    cell = notebook_cell("eos_comparison.ipynb", "#| label: tbl-eos-ratio")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        thr = mlperf.runs_with_throughput(mlperf.load_results(MLPERF))
    shown = []
    ns = {"pl": pl, "compare": compare, "Col": Col, "show_table": show_table, "Markdown": Markdown,
          "md_text": md_text, "display": shown.append, "case_study": True, "published_given": True,
          "published": compare.load_published_results(), "evaluated": "SAKURAONE",
          "reference": "Eos", "thr": thr}  # fmt: skip
    exec(compile(cell, "<tbl-eos-ratio>", "exec"), ns)  # noqa: S102 - the project's own notebook
    (out,) = shown
    assert "Ratio rests on" in out.plain
    rows = pl.read_csv(out.csv.encode()).filter(pl.col("benchmark") == "GPT-3 175B")
    basis = dict(zip(rows["n_nodes"].to_list(), rows["basis"].to_list(), strict=True))
    assert basis[32] == "measured"
    assert basis[64] == "unconfirmed: the time equals a published score"
    assert basis[96] == "extrapolated reference time"
