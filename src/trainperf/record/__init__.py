"""The MLPerf record: every published MLPerf Training result, one row per submission.

Modules:

* :mod:`~trainperf.record.folders`      result folders of results checkouts, their provenance
* :mod:`~trainperf.record.row`          one folder into one row (:data:`RECORD_SCHEMA`)
* :mod:`~trainperf.record.build`        the whole record, in worker processes (:func:`build_record`)
* :mod:`~trainperf.record.accelerators` the systems-JSON accelerator string to its canonical name
* :mod:`~trainperf.record.energy`       the record's energy to train beside the power results' table
"""

from __future__ import annotations

from trainperf.record.accelerators import canonical_accelerator
from trainperf.record.build import (
    RECORD_KEYS,
    build_record,
    read_record,
    record_path,
    write_record,
)
from trainperf.record.energy import ENERGY_KEYS, with_record_energy
from trainperf.record.folders import ResultFolder, find_result_folders, logs_sha256
from trainperf.record.row import ENERGY_COLUMNS, RECORD_SCHEMA, folder_row

__all__ = [
    "ENERGY_COLUMNS",
    "ENERGY_KEYS",
    "RECORD_KEYS",
    "RECORD_SCHEMA",
    "ResultFolder",
    "build_record",
    "canonical_accelerator",
    "find_result_folders",
    "folder_row",
    "logs_sha256",
    "read_record",
    "record_path",
    "with_record_energy",
    "write_record",
]
