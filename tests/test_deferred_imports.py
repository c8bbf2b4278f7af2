"""trainperf.report defers rfc3987_syntax (2 s of grammar building at import, paid by every notebook
kernel through Altair -> jsonschema) until an ``iri`` format check needs it, with the same answers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rfc3987_syntax") is None,
    reason="rfc3987_syntax not installed (jsonschema's format-nongpl extra): nothing to defer",
)


def _run(code: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_kernels_imports_do_not_build_the_rfc3987_grammar():
    # what a notebook kernel (charts -> altair -> jsonschema) and the main job (papermill) import
    got = _run(
        "import sys, json\n"
        "from trainperf.report import charts, notebooks\n"
        "import altair, papermill, jsonschema\n"
        "print(json.dumps({'helpers': 'rfc3987_syntax.syntax_helpers' in sys.modules,\n"
        "  'iri': 'iri' in jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers}))\n"
    )
    # the grammar not built, and the iri checker still registered
    assert got == {"helpers": False, "iri": True}


def test_scanning_every_module_loads_nothing():
    # inspect.getmodule reads __file__ of every module in sys.modules (torch does it for each
    # operator it registers, IPython for a traceback); other dunder probes find nothing
    got = _run(
        "import sys, json, inspect\n"
        "from trainperf.report import charts\n"
        "inspect.getmodule(json.dumps)\n"
        "inspect.getmodule(inspect.currentframe())\n"
        "stub = sys.modules['rfc3987_syntax']\n"
        "print(json.dumps({'helpers': 'rfc3987_syntax.syntax_helpers' in sys.modules,\n"
        "  'wrapped': hasattr(stub, '__wrapped__'), 'file': stub.__file__.endswith('__init__.py')}))\n"
    )
    assert got == {"helpers": False, "wrapped": False, "file": True}


def test_iri_checks_answer_as_rfc_3987_says_once_used():
    # RFC 3987 section 2.2: IRI = scheme ":" ihier-part [...]; ucschar (e.g. U+4F8B, U+30D1) is
    # allowed in ipath and ireg-name; a space is in no production; a relative reference has no
    # scheme, so it is an irelative-ref (an IRI-reference) but not an IRI
    got = _run(
        "import sys, json\n"
        "import trainperf.report, jsonschema\n"
        "c = jsonschema.Draft202012Validator.FORMAT_CHECKER\n"
        "values = ['http://例え.jp/パス', 'http://a b/', 'relative/path', 'urn:isbn:0451450523']\n"
        "print(json.dumps({'iri': [c.conforms(v, 'iri') for v in values],\n"
        "  'ref': [c.conforms(v, 'iri-reference') for v in values],\n"
        "  'helpers': 'rfc3987_syntax.syntax_helpers' in sys.modules,\n"
        "  'real': type(sys.modules['rfc3987_syntax']) is type(sys)}))\n"
    )
    assert got["iri"] == [True, False, False, True]
    assert got["ref"] == [True, False, True, True]
    # loaded at the first check, and the real module replaced the stand-in
    assert got["helpers"] is True and got["real"] is True


def test_nothing_is_deferred_once_jsonschema_registered_its_checkers():
    got = _run(
        "import sys, json\n"
        "import jsonschema\n"
        "from trainperf.report._deferred_imports import defer_rfc3987_syntax\n"
        "print(json.dumps({'installed': defer_rfc3987_syntax(),\n"
        "  'real': type(sys.modules['rfc3987_syntax']) is type(sys)}))\n"
    )
    assert got == {"installed": False, "real": True}
