"""Execute one notebook with papermill, atomically (the failed copy kept for inspection), and read
the Quarto cell options (``#|`` lines) of notebooks and documents.

Three choices keep a run quiet and its failures readable:

* the kernel talks to papermill over IPC (Unix sockets in a private temporary folder), not TCP:
  ipykernel warns "Kernel is running over TCP without encryption" for every kernel started on TCP
  without CurveZMQ keys (``ipykernel/kernelapp.py``, ``init_sockets``), which a report run started
  eleven times;
* the kernel is not sent SIGINT when it is shut down after a run: jupyter_client interrupts a
  kernel before every graceful shutdown (``KernelManager._async_shutdown_kernel``), and an
  interrupt that lands while ipykernel is still finishing its last message handler is logged as
  "KeyboardInterrupt caught in kernel" at the end of a successful run; after the last cell the
  kernel is stopped at once (nbclient's ``shutdown_kernel="immediate"``: no request, no interrupt,
  no polling), and an interrupt of a graceful shutdown (a timeout) is skipped;
* a failing cell raises :class:`NotebookError`, whose message is one line naming the notebook,
  the cell and the library's own ``Type: message``, instead of papermill's banner of dashes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml
from jupyter_client.manager import AsyncKernelManager
from traitlets import default

from trainperf.atomic import atomic_path
from trainperf.errors import ConfigError, TrainperfError

__all__ = [
    "CellOptionsError",
    "NotebookError",
    "NotebookSpec",
    "cell_options",
    "check_cell_options",
    "document_option_blocks",
    "execute_notebook",
]


@dataclass(frozen=True)
class NotebookSpec:
    """One analysis notebook of the main job.

    Attributes:
        name: file stem in ``notebooks/``.
        title: page title in the preview site.
        parameters: overrides of the notebook's defaults, relative paths resolved against the repo root.
    """

    name: str
    title: str
    parameters: dict = field(default_factory=dict)


class NotebookError(TrainperfError):
    """A notebook cell failed.

    The message is one line: ``notebooks/x.ipynb, cell 5 (tbl-x): ValueError: what went wrong``
    (cell 5: the fifth cell of the source notebook, markdown cells included).

    Attributes:
        notebook: the source notebook.
        cell_index: 1-based position of the failing cell in the source notebook (the cell papermill
            injects does not count), or None.
        label: the cell's ``#| label``, else its first line of code, or None.
        ename, evalue: the exception type and message raised inside the kernel.
        executed: the executed copy kept for inspection (``.failed.ipynb``), or None.
    """

    def __init__(
        self,
        notebook: str,
        cell_index: int | None,
        label: str | None,
        ename: str,
        evalue: str,
        executed: Path | None = None,
    ):
        self.notebook, self.cell_index, self.label = notebook, cell_index, label
        self.ename, self.evalue, self.executed = ename, evalue, executed
        first = next((ln.strip() for ln in str(evalue).splitlines() if ln.strip()), "")
        where = f"cell {cell_index}" if cell_index is not None else "a cell"
        if label:
            where += f" ({label})"
        super().__init__(f"{notebook}, {where}: {ename}: {first}".rstrip(": "))

    def __reduce__(self):
        # rebuilt from its fields when it crosses from a worker process of the main job
        args = (self.notebook, self.cell_index, self.label, self.ename, self.evalue, self.executed)
        return (type(self), args)


class CellOptionsError(ConfigError):
    """A ``#|`` cell-option block that is not valid YAML (Quarto would refuse to render)."""


_OPTION_LINE = re.compile(r"^#\|\s?(.*)$")


def cell_options(source: str, where: str = "cell") -> dict:
    """The Quarto cell options of a code cell: its leading ``#|`` lines, parsed as YAML.

    Quarto reads these lines as one YAML mapping with js-yaml (quarto-cli
    ``src/core/lib/partition-cell-options.ts``); this uses PyYAML, which rejects the same
    malformed blocks that matter here (an unquoted ``: `` inside a value, bad indentation). The
    two differ on YAML 1.1 booleans such as ``yes``, which PyYAML reads as true.

    Args:
        source: the cell's source text.
        where: names the cell in the error (e.g. ``notebooks/x.ipynb cell 4``).

    Returns:
        The options (empty when the cell has none).

    Raises:
        CellOptionsError: the block is not YAML, or not a mapping; the message names ``where``,
            the line and YAML's own complaint.
    """

    lines = []
    for line in source.splitlines():
        m = _OPTION_LINE.match(line)
        if not m:
            break
        lines.append(m.group(1))
    if not lines:
        return {}
    try:
        data = yaml.safe_load("\n".join(lines))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f", option line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CellOptionsError(
            f"{where}{at}: the #| options are not valid YAML ({problem}); "
            "quote a value that contains ': ', e.g. fig-cap: \"A: b\""
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CellOptionsError(f"{where}: the #| options must be 'key: value' lines")
    return data


_CHUNK = re.compile(r"^```+\s*\{[^}]*\}[^\n]*\n(.*?)^```", re.M | re.S)


def document_option_blocks(path: str | Path) -> list[tuple[str, str]]:
    """The code cells of a notebook or the code chunks of a ``.qmd`` document that carry ``#|``
    options, as ``(where, source)`` pairs for :func:`cell_options`."""
    path = Path(path)
    out = []
    if path.suffix == ".ipynb":
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and cell.source.lstrip().startswith("#|"):
                out.append((f"{path} cell {i}", cell.source))
    else:
        text = path.read_text(encoding="utf-8")
        for m in _CHUNK.finditer(text):
            if m.group(1).lstrip().startswith("#|"):
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{path}:{line}", m.group(1)))
    return out


def check_cell_options(paths) -> int:
    """Parse every ``#|`` block of the given notebooks and documents (see :func:`cell_options`).

    Returns:
        The number of blocks checked.

    Raises:
        CellOptionsError: the first invalid block.
    """
    n = 0
    for p in paths:
        for where, source in document_option_blocks(p):
            cell_options(source, where)
            n += 1
    return n


def _kernel_manager_class(sock_dir: str):
    """A kernel manager class on IPC transport with its sockets in ``sock_dir``, and no interrupt
    at shutdown (see the module docstring). A class, not an instance: nbclient shuts down only
    the kernels of managers it created itself (``NotebookClient.owns_km``)."""

    class ReportKernelManager(AsyncKernelManager):
        @default("transport")
        def _default_transport(self):
            return "ipc"

        @default("ip")
        def _default_ip(self):
            # absolute: the default "kernel-ipc" is relative to each process's working folder
            return os.path.join(sock_dir, "k")

        async def _async_interrupt_kernel(self) -> None:
            if self.shutting_down:  # set by _async_shutdown_kernel just before it interrupts
                return
            await super()._async_interrupt_kernel()

    return ReportKernelManager


def _failed_cell(nb_path: Path, exc) -> tuple[int | None, str | None]:
    """(1-based position of the failed cell in the source notebook, its label or first line)."""
    index, source = exc.cell_index, exc.source or ""
    label = None
    try:
        label = cell_options(source).get("label")
    except CellOptionsError:
        pass
    if not label:
        code = [ln.strip() for ln in source.splitlines() if ln.strip() and not ln.startswith("#")]
        label = (code[0][:48] + ("…" if len(code[0]) > 48 else "")) if code else None
    if index is None:
        return None, label
    try:
        # papermill's index counts the cells of the executed notebook before it added its two
        # error-marker cells; the injected-parameters cell is not in the source notebook
        cells = [
            c
            for c in nbformat.read(nb_path, as_version=4).cells
            if "papermill-error-cell-tag" not in c.metadata.get("tags", [])
        ]
        injected = sum(
            1 for c in cells[:index] if "injected-parameters" in c.metadata.get("tags", [])
        )
        return index + 1 - injected, label
    except Exception:  # only a nicety for the message
        return index + 1, label


def execute_notebook(
    notebook: str | Path,
    output: str | Path,
    parameters: dict | None = None,
    cwd: str | Path | None = None,
    progress: bool = True,
    name: str | None = None,
) -> Path:
    """Execute ``notebook`` with papermill into ``output`` (atomically).

    Args:
        notebook: source notebook (never modified).
        output: executed copy to write.
        parameters: values injected after the cell tagged ``parameters``.
        cwd: working folder of the kernel (defaults to the notebook's folder).
        progress: papermill's per-cell progress bar.
        name: how errors name the notebook (default: ``notebooks/<file name>``).

    Returns:
        ``output``.

    Raises:
        NotebookError: a cell failed (the failed notebook is kept next to ``output`` with the
            suffix ``.failed.ipynb`` for inspection; the papermill error is its ``__context__``).
    """
    # deferred: papermill costs 2-4 s at import (-X importtime); only execution needs it
    import papermill as pm  # noqa: PLC0415

    notebook, output = Path(notebook), Path(output)
    name = name or (
        f"{notebook.parent.name}/{notebook.name}" if notebook.parent.name else notebook.name
    )
    tmp = atomic_path(output.with_suffix(".ipynb"))
    tmp_nb = tmp.with_name(tmp.name + ".ipynb")
    tmp.unlink()
    failed = output.with_suffix(".failed.ipynb")
    # short and private: a Unix socket path must stay under ~100 bytes
    sock_dir = tempfile.mkdtemp(prefix="tp-kernel-")
    try:
        pm.execute_notebook(
            str(notebook),
            str(tmp_nb),
            parameters=parameters or {},
            cwd=str(cwd or notebook.parent),
            kernel_name="python3",
            progress_bar=progress,
            log_output=False,
            kernel_manager_class=_kernel_manager_class(sock_dir),
            # every cell has ended and its outputs are in (nbclient waits for the kernel's idle
            # status after each cell): the kernel is stopped at once instead of being asked to
            # and polled for, which kept a worker of the main job waiting 0.2-0.5 s a notebook
            shutdown_kernel="immediate",
        )
        os.replace(tmp_nb, output)
        failed.unlink(missing_ok=True)
    except pm.PapermillExecutionError as exc:
        if tmp_nb.exists():
            os.replace(tmp_nb, failed)
        position, label = _failed_cell(failed, exc)
        raise NotebookError(  # noqa: B904 (see below)
            name,
            position,
            label,
            exc.ename,
            exc.evalue,
            failed if failed.exists() else None,
        )  # no "from": format_error follows __cause__; papermill's error stays the __context__
    except Exception:
        if tmp_nb.exists():
            os.replace(tmp_nb, failed)
        raise
    finally:
        tmp_nb.unlink(missing_ok=True)
        shutil.rmtree(sock_dir, ignore_errors=True)
    return output
