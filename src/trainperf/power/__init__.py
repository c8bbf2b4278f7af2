"""MLPerf Training power results: the power logs read and checked, energy to train recomputed.

What this package owns: reading the node and switch power logs MLCommons publishes beside some
results (``results/<system>/<benchmark>/power/result_N/node_K.txt``, ``sw_K.txt``), checking every
value (gaps, duplicate readings and hosts, readings outside the run, conversion efficiency; a
data-quality row and a warning naming the file and line for each check that fires), and the energy
to train by the MLPerf power rules (mlcommons/training_policies ``power_measurement.adoc``), equal to
mlcommons/logging's result summarizer on the same folders.

Modules:

* :mod:`~trainperf.power.read`    one power log into checked readings (:func:`read_power_log`)
* :mod:`~trainperf.power.energy`  energy per file, run and score (:func:`energy_to_train`)

GPU-only energy from DCGM telemetry is :mod:`trainperf.telemetry.energy`, never an MLPerf power figure.
"""

from __future__ import annotations

from trainperf.power.energy import (
    FILE_ENERGY_SCHEMA,
    RUN_ENERGY_SCHEMA,
    SCORE_ENERGY_SCHEMA,
    PowerResult,
    energy_to_train,
    file_energy,
    find_power_folders,
)
from trainperf.power.read import READING_SCHEMA, PowerLog, PowerLogWarning, read_power_log

__all__ = [
    "FILE_ENERGY_SCHEMA",
    "READING_SCHEMA",
    "RUN_ENERGY_SCHEMA",
    "SCORE_ENERGY_SCHEMA",
    "PowerLog",
    "PowerLogWarning",
    "PowerResult",
    "energy_to_train",
    "file_energy",
    "find_power_folders",
    "read_power_log",
]
