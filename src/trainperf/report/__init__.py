"""The report machinery: from analysis notebooks to the book, the preview site and the command line.

* :mod:`~trainperf.report.job` the main job (``trainperf report``): batch grids, notebooks, book;
* :mod:`~trainperf.report.notebooks` executes one notebook with papermill, atomically;
* :mod:`~trainperf.report.rerun` re-runs do only what changed (a notebook whose inputs did not
  change is skipped);
* :mod:`~trainperf.report.absent` the page of a notebook whose input the cluster config does not give;
* :mod:`~trainperf.report.display` tables for people (Markdown, rounded, human headers, CSV detail);
* :mod:`~trainperf.report.runs_cli` ``trainperf runs`` (MLPerf runs of a folder as table, CSV or JSON);
* :mod:`~trainperf.report.values` numbers for the book's prose (``values.yml``);
* :mod:`~trainperf.report.preview` the static preview site (no Quarto needed);
* :mod:`~trainperf.report.batch` one notebook over a grid of parameter sets (``trainperf batch``);
* :mod:`~trainperf.report.charts` the Altair charts behind one theme, and figure export;
* :mod:`~trainperf.report.cli` the ``trainperf`` command.

Analyses (:mod:`trainperf.flops`, :mod:`trainperf.compare`, :mod:`trainperf.telemetry`, ...) never
import from here; this package imports them.
"""

# first, for its effect: importing it puts the stand-in for rfc3987_syntax in sys.modules before
# anything of the report imports jsonschema (Altair, papermill): ~2 s less of every kernel's start
from trainperf.report import _deferred_imports  # noqa: F401
