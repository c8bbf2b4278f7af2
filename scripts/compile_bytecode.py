"""Compile to bytecode the Python modules the main job's processes import (``make env`` runs this).

Why: ``trainperf report`` starts one Python process per notebook kernel and per batch worker, each
importing polars, altair, IPython, ipykernel and trainperf. A module without a cached ``.pyc`` is
compiled again in every process that imports it. pip compiles everything it installs (~7,000
files here, ~25 s of CPU); uv, which ``make env`` uses because it installs the environment in
~8 s instead of ~75 s, compiles nothing unless asked (``--compile-bytecode`` compiles all ~7,000
files again); and where ``PYTHONDONTWRITEBYTECODE`` is set, Python never writes a ``.pyc`` itself,
so every kernel paid ~2.5 s of compiling (measured: a papermill run of the first cell of
``notebooks/mlperf_runs.ipynb`` took 4.5-7.2 s without, 2.3-2.6 s with the ``.pyc`` files).

This imports what those processes import, letting the import system write the bytecode of what
it compiles (``sys.dont_write_bytecode`` off in this process only), then compiles each loaded
``.py`` file that still has no current ``.pyc`` (``py_compile`` with the interpreter's own cache
path, so ``PYTHONPYCACHEPREFIX`` is honoured): ~1,100 files in ~5 s. Nothing but ``__pycache__``
files is written; a module that cannot be imported here is skipped (it is compiled on use, as
before). The count printed is of the files written by either way.

Usage: ``python scripts/compile_bytecode.py [MODULE ...]`` (default: :data:`ENTRY_MODULES` and
every module of the ``trainperf`` package). Prints one line: how many files were compiled.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import py_compile
import sys
import time
import warnings
from pathlib import Path

#: What the processes of the main job import besides trainperf: the command line's papermill,
#: nbclient and pandoc wrapper, and the kernels' IPython, ipykernel and the notebooks' libraries.
ENTRY_MODULES = [
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "debugpy.server.api",  # a kernel with the debugger enabled loads debugpy's vendored pydevd
    "psutil",
    "tornado.platform.asyncio",
    "tornado.locks",
    "tornado.queues",
    "IPython",
    "IPython.core.debugger",
    "IPython.core.completerlib",
    "IPython.core.logger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "IPython.utils.wildcard",
    "papermill",
    "nbclient",
    "nbformat",
    "jupyter_client",
    "polars",
    "altair",
    "vl_convert",
    "pypandoc",
    "yaml",
    "tqdm",
]


def _package_modules(package: str) -> list[str]:
    try:
        pkg = importlib.import_module(package)
    except ImportError:  # not installed here: nothing of it to compile
        return []
    return [
        m.name
        for m in pkgutil.walk_packages(pkg.__path__, f"{package}.")
        if not m.name.endswith("__main__")  # importing a __main__ would run a command
    ]


def import_quietly(names: list[str]) -> list[str]:
    """Import ``names``; return those that could not be imported (one reason each)."""
    failed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # import-time warnings are the importing code's business
        for name in names:
            try:
                importlib.import_module(name)
            except Exception as exc:  # an optional extra not installed: compiled on use instead
                failed.append(f"{name}: {type(exc).__name__}")
    return failed


def _loaded_sources() -> list[Path]:
    """The ``.py`` files of the modules loaded in this process."""
    out = set()
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        origin = getattr(spec, "origin", None)
        if origin and origin.endswith(".py"):
            out.add(Path(origin))
    return sorted(out)


def _cache(src: Path) -> Path | None:
    try:
        return Path(importlib.util.cache_from_source(str(src)))
    except (ValueError, NotImplementedError):  # no cache path for this file
        return None


def uncompiled_sources() -> list[Path]:
    """The ``.py`` files of the loaded modules whose ``.pyc`` is missing or older than them."""
    out = []
    for src in _loaded_sources():
        cache = _cache(src)
        try:
            if cache is None or (cache.is_file() and cache.stat().st_mtime >= src.stat().st_mtime):
                continue
        except OSError:
            continue
        out.append(src)
    return out


def compile_sources(sources: list[Path]) -> int:
    """Compile each file to its cache path; returns how many were written (unwritable skipped)."""
    n = 0
    for src in sources:
        try:
            py_compile.compile(
                str(src), cfile=importlib.util.cache_from_source(str(src)), doraise=True
            )
            n += 1
        except (OSError, py_compile.PyCompileError):
            continue
    return n


def main(argv: list[str]) -> int:
    t0 = time.time() - 0.01  # a .pyc written from here on was written by this run
    # importing compiles each module anyway: let the import system write what it compiled (here
    # only, whatever PYTHONDONTWRITEBYTECODE says), then compile what is still missing
    sys.dont_write_bytecode = False
    # importing debugpy's pydevd warns about frozen modules unless told this (its own message says so)
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    names = argv or [*ENTRY_MODULES, "trainperf", *_package_modules("trainperf")]
    import_quietly(names)
    compile_sources(uncompiled_sources())
    n = 0
    for src in _loaded_sources():
        cache = _cache(src)
        try:
            n += cache is not None and cache.stat().st_mtime >= t0
        except OSError:
            continue
    print(f"compile_bytecode: {n} module{'' if n == 1 else 's'} compiled to bytecode")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
