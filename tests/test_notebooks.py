"""Executing one notebook: a quiet kernel, a one-line error naming notebook and cell, and the ``#|``
cell options read as YAML, as Quarto reads them."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from helpers import ROOT

from trainperf.errors import format_error, print_error
from trainperf.report import notebooks as nbmod
from trainperf.report.notebooks import (
    CellOptionsError,
    NotebookError,
    cell_options,
    check_cell_options,
    document_option_blocks,
    execute_notebook,
)


def _child_kernels() -> list[int]:
    """Kernel processes whose parent is this test process (Linux /proc)."""
    me, found = os.getpid(), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmd = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and b"ipykernel" in cmd:
            found.append(int(stat.parent.name))
    return found


def _notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "language": "python",
        "display_name": "Python 3",
    }
    nbformat.write(nb, path)
    return path


# --------------------------------------------------------------------------- cell options

# The three cells of issue 12, verbatim from main before the fix: Quarto 1.10.18 stopped with
# "YAMLException: bad indentation of a mapping entry (undefined, 3:59)" on the first one.
ISSUE_12_CELLS = {
    "notebooks/mlperf_runs.ipynb": "#| label: fig-mlperf-eval\n#| fig-cap: Evaluation metric against training progress (gpt3: log perplexity against tokens; llama2_70b_lora: eval loss against samples); dashed line, the convergence target.\ncurve = mlperf.eval_curve(results)\n",
    "notebooks/eos_comparison.ipynb": "#| label: tbl-eos-talk\n#| tbl-cap: Where the talk's quoted ratio would sit: the time to train it implies at each scale.\ncompare.talk_ratio_placement(published)\n",
    "notebooks/memory_model.ipynb": "#| label: tbl-memory-nodes\n#| tbl-cap: Model state per GPU by node count: spread evenly over all GPUs, and with the TP x PP x ZeRO layout.\nby_nodes = 1\n",
}


@pytest.mark.parametrize("where", sorted(ISSUE_12_CELLS))
def test_the_three_captions_of_issue_12_are_refused(where):
    with pytest.raises(
        CellOptionsError, match=re.escape(where) + r", option line 2: .*not valid YAML"
    ):
        cell_options(ISSUE_12_CELLS[where], where)


def test_quoted_captions_parse_to_the_caption_text():
    src = '#| label: tbl-eos-talk\n#| tbl-cap: "Where the talk\'s quoted ratio would sit: the time to train it implies at each scale."\nx = 1\n'
    assert cell_options(src) == {
        "label": "tbl-eos-talk",
        "tbl-cap": "Where the talk's quoted ratio would sit: the time to train it implies at each scale.",
    }
    # only the leading #| lines are options; a later one is code
    assert cell_options("x = 1\n#| label: nope\n") == {}


def test_every_option_block_of_the_repo_is_yaml():
    docs = (
        sorted((ROOT / "notebooks").glob("*.ipynb"))
        + sorted((ROOT / "chapters").glob("*.qmd"))
        + sorted(ROOT.glob("*.qmd"))
        + sorted((ROOT / "talk").glob("*.qmd"))
    )
    n = check_cell_options(docs)
    # every table and figure cell of the seven notebooks has a label and a caption
    labelled = sum(
        1
        for d in docs
        if d.suffix == ".ipynb"
        for _, src in document_option_blocks(d)
        if "label" in cell_options(src)
    )
    assert n == labelled and labelled >= 40
    # and the captions of the three cells are the fixed, quoted ones
    for nb, src in ISSUE_12_CELLS.items():
        label = re.search(r"label: (\S+)", src).group(1)
        opts = [
            cell_options(s)
            for _, s in document_option_blocks(ROOT / nb)
            if cell_options(s).get("label") == label
        ]
        assert len(opts) == 1 and ": " in (opts[0].get("fig-cap") or opts[0].get("tbl-cap"))


def test_qmd_chunks_are_checked(tmp_path):
    qmd = tmp_path / "c.qmd"
    qmd.write_text("# T\n\n```{python}\n#| label: fig-x\n#| fig-cap: a: b\n1\n```\n")
    with pytest.raises(CellOptionsError, match=r"c\.qmd:3, option line 2"):
        check_cell_options([qmd])


# --------------------------------------------------------------------------- execution


def test_a_run_prints_no_kernel_warning(tmp_path, capfd):
    nb = _notebook(
        tmp_path / "ok.ipynb",
        [
            nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell("print(x * 2)"),
        ],
    )
    for i in range(3):  # the shutdown race showed on some runs only
        out = execute_notebook(nb, tmp_path / f"out{i}.ipynb", {"x": 21}, progress=False)
        assert "".join(json.loads(out.read_text())["cells"][-1]["outputs"][0]["text"]) == "42\n"
    captured = capfd.readouterr()
    text = captured.out + captured.err
    assert "without encryption" not in text
    assert "KeyboardInterrupt" not in text
    assert not list(tmp_path.glob("*.failed.ipynb"))
    # every kernel was shut down (nbclient stops only kernels of managers it created itself)
    deadline = time.monotonic() + 300  # a bound for a busy machine, never a measurement
    while _child_kernels() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _child_kernels() == []


def test_kernel_manager_uses_ipc_and_skips_the_interrupt_at_shutdown(tmp_path):
    km = nbmod._kernel_manager_class(str(tmp_path))(kernel_name="python3")
    assert km.transport == "ipc" and km.ip == str(tmp_path / "k")
    # no kernel is running: jupyter_client's own interrupt raises; during shutdown ours does nothing
    with pytest.raises(RuntimeError, match="No kernel is running"):
        asyncio.run(km._async_interrupt_kernel())
    km.shutting_down = True
    assert asyncio.run(km._async_interrupt_kernel()) is None


def test_a_failing_cell_is_one_line_naming_notebook_cell_and_message(tmp_path, capsys):
    (tmp_path / "notebooks").mkdir()
    nb = _notebook(
        tmp_path / "notebooks" / "bad.ipynb",
        [
            nbformat.v4.new_markdown_cell("# A notebook"),
            nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell(
                "#| label: tbl-bad\nraise ValueError(f'no such system: {x}\\nsecond line')"
            ),
        ],
    )
    with pytest.raises(NotebookError) as err:
        execute_notebook(nb, tmp_path / "out" / "bad.ipynb", {"x": "Eos"}, progress=False)
    # cell 3: markdown, parameters, the failing cell (papermill's injected cell not counted)
    assert (
        str(err.value) == "notebooks/bad.ipynb, cell 3 (tbl-bad): ValueError: no such system: Eos"
    )
    assert err.value.executed == tmp_path / "out" / "bad.failed.ipynb"
    assert err.value.executed.is_file() and not (tmp_path / "out" / "bad.ipynb").exists()
    assert type(err.value.__context__).__name__ == "PapermillExecutionError"
    assert print_error(err.value, debug=False) == 1
    line = capsys.readouterr().err.strip()
    assert line == (
        "trainperf: error: NotebookError: notebooks/bad.ipynb, cell 3 (tbl-bad): ValueError: no such "
        "system: Eos (run with --debug for the traceback)"
    )
    assert format_error(err.value).count("\n") == 0 and "-----" not in line


def test_failing_cell_without_label_is_named_by_its_first_line(tmp_path):
    nb = _notebook(
        tmp_path / "bad2.ipynb",
        [nbformat.v4.new_code_cell("import math\nmath.sqrt(-1)")],
    )
    with pytest.raises(
        NotebookError, match=r"^bad2\.ipynb, cell 1 \(import math\): ValueError: math domain error$"
    ):
        execute_notebook(nb, tmp_path / "out.ipynb", progress=False, name="bad2.ipynb")
