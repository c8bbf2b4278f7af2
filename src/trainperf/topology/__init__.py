"""Where a training job's ranks sit on the cluster, and which link each parallel group's traffic takes.

The rules and their sources: :mod:`trainperf.topology.layout`; the scale-up (NVLink / xGMI) domain
of the accelerator: :mod:`trainperf.topology.domain`.
"""

from trainperf.topology.domain import scaleup_domain, tp_domain_sentence
from trainperf.topology.layout import (
    LAYOUT_SCHEMA,
    LAYOUTS_SCHEMA,
    LINKS_SCHEMA,
    group_links,
    job_parameters,
    load_layouts,
    pick_job,
    rank_layout,
)

__all__ = [
    "LAYOUTS_SCHEMA",
    "LAYOUT_SCHEMA",
    "LINKS_SCHEMA",
    "group_links",
    "job_parameters",
    "load_layouts",
    "pick_job",
    "rank_layout",
    "scaleup_domain",
    "tp_domain_sentence",
]
