"""The cluster config: one YAML file that names the evaluated cluster (name, accelerator, GPUs per
node) and the inputs the report reads (MLPerf logs, published rows, telemetry, sacct dumps, the
reference system). :func:`load_config` validates it before anything runs; :func:`write_template`
writes the commented template of ``trainperf init``; :func:`report_overrides` turns a config into
the main job's notebook parameters.

The names are imported from their modules at first use (PEP 562 ``__getattr__``): ``trainperf
init`` writes the template without the schema's imports (polars, the MLPerf reader, the accelerator
table; issue 41), and ``from trainperf.config import load_config`` works as before.
"""

from __future__ import annotations

import importlib
import typing

# name -> the module that defines it
_WHERE = {
    "DEMO_CONFIG": "plan",
    "config_values": "plan",
    "report_overrides": "plan",
    "LANGUAGES": "schema",
    "PRECISIONS": "schema",
    "SYNTHETIC": "schema",
    "ClusterConfig": "schema",
    "PublishedInput": "schema",
    "ReferenceInput": "schema",
    "TelemetryInput": "schema",
    "load_config": "schema",
    "parse_config": "schema",
    "TEMPLATE": "template",
    "write_template": "template",
}

__all__ = [
    "DEMO_CONFIG",
    "LANGUAGES",
    "PRECISIONS",
    "SYNTHETIC",
    "TEMPLATE",
    "ClusterConfig",
    "PublishedInput",
    "ReferenceInput",
    "TelemetryInput",
    "config_values",
    "load_config",
    "parse_config",
    "report_overrides",
    "write_template",
]

if typing.TYPE_CHECKING:  # the names as type checkers and scripts/api_index.py read them
    from trainperf.config.plan import DEMO_CONFIG, config_values, report_overrides
    from trainperf.config.schema import (
        LANGUAGES,
        PRECISIONS,
        SYNTHETIC,
        ClusterConfig,
        PublishedInput,
        ReferenceInput,
        TelemetryInput,
        load_config,
        parse_config,
    )
    from trainperf.config.template import TEMPLATE, write_template


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'trainperf.config' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"trainperf.config.{module}"), name)
    globals()[name] = value  # later lookups find it without this call
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
