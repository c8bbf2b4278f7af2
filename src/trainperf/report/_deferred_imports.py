"""Deferring the import of ``rfc3987_syntax`` until it is used.

Every process of the report imports :mod:`jsonschema`: each notebook kernel through Altair, the main
job and its workers through papermill (nbformat). ``jsonschema._format`` imports
``rfc3987_syntax`` whenever it is installed (jsonschema's ``format-nongpl`` extra, which
jupyter-events, and with it HolisticTraceAnalysis's jupyterlab, require) only to register the
``iri`` format checkers, and ``rfc3987_syntax`` builds three Earley parsers of the RFC 3987 grammar
at import (``syntax_helpers.py``): measured with ``python -X importtime -c "import altair"``, 2.2 s
of CPU of the 2.8 s the import takes on a 2-core machine, paid by every kernel. Neither Altair nor
papermill ever checks an ``iri`` (the Vega-Lite schema's formats are ``uri``, ``uri-reference`` and
``color-hex``; nbformat's none), so :func:`defer_rfc3987_syntax` puts a stand-in module in
``sys.modules`` that imports the real one the first time anything of it is used: an ``iri`` check
gives the same answer, only later. No library does this (``importlib.util.LazyLoader`` loads a
module at its first attribute access, which ``from rfc3987_syntax import is_valid_syntax`` in
jsonschema is).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

__all__ = ["defer_rfc3987_syntax"]

_NAME = "rfc3987_syntax"


class _Deferred(types.ModuleType):
    """The stand-in: any attribute it lacks (all but ``is_valid_syntax`` and the module's own
    ``__name__``, ``__spec__``, ``__path__``, ``__file__``) is the real module's, loaded then;
    a probe for another dunder name (what ``inspect.getmodule`` and the like ask every module in
    ``sys.modules``, e.g. torch registering its operators) is an AttributeError, as for a module
    without it, and loads nothing."""

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__") and attr != "__all__":
            raise AttributeError(attr)
        return getattr(_load(), attr)


def _load() -> types.ModuleType:
    """The real ``rfc3987_syntax``, imported now if the stand-in is still in ``sys.modules``."""
    mod = sys.modules.get(_NAME)
    if isinstance(mod, _Deferred) or mod is None:
        sys.modules.pop(_NAME, None)
        mod = importlib.import_module(_NAME)
    return mod


def _is_valid_syntax(term: str, value: str) -> bool:
    """``rfc3987_syntax.is_valid_syntax``, loading the module at the first call."""
    return _load().is_valid_syntax(term, value)


def defer_rfc3987_syntax() -> bool:
    """Put the stand-in for ``rfc3987_syntax`` in ``sys.modules`` (see the module docstring).

    Nothing is done when it is not installed, or already imported, or when ``jsonschema`` has
    already registered its format checkers (too late to matter).

    Returns:
        True when the stand-in was installed.
    """
    if _NAME in sys.modules or "jsonschema._format" in sys.modules:
        return False
    spec = importlib.util.find_spec(_NAME)
    if spec is None:
        return False
    stub = _Deferred(_NAME, "stand-in for rfc3987_syntax, imported at its first use")
    stub.__spec__ = spec
    # submodules (rfc3987_syntax.utils) are found through the real package's folder
    stub.__path__ = list(spec.submodule_search_locations or [])
    stub.__file__ = spec.origin
    stub.is_valid_syntax = _is_valid_syntax
    sys.modules[_NAME] = stub
    return True


# at import: trainperf.report imports this module before anything of the report imports jsonschema
# (Altair, papermill): ~2 s less of every kernel's start
defer_rfc3987_syntax()
