"""Reference tables as data files, and the one loader that reads them.

Two places hold tables, both CSV with a header row:

* this package's folder (``trainperf/tables/*.csv``): tables the readers need to work at all, such as
  the DCGM field table (``dcgm_fields``) and its aliases (``dcgm_aliases``); their sources are in
  ``README.md`` beside them;
* the repository's ``data/reference/*.csv``: the cited reference tables of the report (published
  results, accelerators, systems, TOP500, memory wall); every row carries its source in a column.
"""

from trainperf.tables.loader import (
    PACKAGE_TABLES,
    default_reference_dir,
    package_table,
    read_table,
)

__all__ = ["PACKAGE_TABLES", "default_reference_dir", "package_table", "read_table"]
