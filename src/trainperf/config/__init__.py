"""The cluster config: one YAML file that names the evaluated cluster (name, accelerator, GPUs per
node) and the inputs the report reads (MLPerf logs, published rows, telemetry, sacct dumps, the
reference system). :func:`load_config` validates it before anything runs; :func:`write_template`
writes the commented template of ``trainperf init``; :func:`report_overrides` turns a config into
the main job's notebook parameters."""

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
