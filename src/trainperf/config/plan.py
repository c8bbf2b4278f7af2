"""From a cluster config to the main job's inputs: notebook parameters, the notebooks whose input
is not given (with the sentence the book shows instead), and the values the chapters quote."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trainperf.config.schema import ClusterConfig
from trainperf.markup import md_code, md_text
from trainperf.topology.domain import scaleup_domain, tp_domain_sentence

__all__ = ["DEMO_CONFIG", "ReportInputs", "config_values", "report_overrides"]

DEMO_CONFIG = "configs/sakuraone.yaml"
"""The demo's own config, relative to the repository root: ``trainperf report`` without
``--config`` reads it (SAKURAONE's published rows against the bundled Eos logs, with the synthetic
telemetry and sacct history, marked as such)."""

_ABSENT = {
    "telemetry": "No telemetry was given for {name} (config key `telemetry:`), so this chapter shows no cluster telemetry.",
    "slurm_jobs": "No Slurm accounting was given for {name} (config key `sacct:`), so this chapter shows no job statistics.",
    "reliability": "No Slurm accounting was given for {name} (config key `sacct:`), so this chapter shows no failure rates.",
}


@dataclass
class ReportInputs:
    """What a config asks of the main job (:func:`report_overrides`).

    Attributes:
        overrides: ``{notebook: {parameter: value}}`` (absolute paths).
        absent: ``{notebook: sentence}``: notebooks not executed because their input is not given;
            the job writes a copy whose labelled cells show the sentence instead.
        reference_mlperf: folder of the reference logs (the batch grid discovers it).
    """

    overrides: dict[str, dict] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)
    reference_mlperf: str = ""


def report_overrides(cfg: ClusterConfig) -> ReportInputs:
    """The notebook parameters a config sets (the user's ``-p`` overrides still come last)."""
    ref = cfg.reference
    # a pinned folder of logs (the demo's Eos) is named; the MLPerf record as the reference (the
    # default, or pinned results of it) is "the reference": no Eos column, header or table
    ref_logs = ref.pinned and not ref.from_record
    ref_name = ref.name if ref_logs else "the reference"
    ov: dict[str, dict] = {
        # the runs chapter shows the evaluated system's own logs, else the reference's
        "mlperf_runs": {"mlperf_path": cfg.mlperf or ref.mlperf},
        "eos_comparison": {
            "evaluated": cfg.name,
            "reference": ref_name,
            "reference_logs": ref_logs,
            "accelerator": cfg.accelerator,
            "mlperf_path": ref.mlperf,
            "published_given": cfg.published is not None,
            # its network family in the record's figures (free text: "800GbE RoCEv2 ...")
            "evaluated_network": cfg.description,
        },
        # the power results of its GPU first; its own power results and telemetry below
        "energy": {"accelerator": cfg.accelerator},
        "memory_model": {
            "accelerator": cfg.accelerator,
            "gpus_per_node": cfg.gpus_per_node,
            "gpu_memory_gb": cfg.gpu_memory_gb,
        },
        "cluster": {
            "evaluated": cfg.name,
            "reference": ref_name,
            "accelerator": cfg.accelerator,
            "gpus_per_node": cfg.gpus_per_node,
            "nodes": cfg.nodes or 0,
            "description": cfg.description,
            # the hardware of the cluster's systems JSON (trainperf.mlperf.system_table_rows)
            "mlperf_path": cfg.mlperf or "",
        },
    }
    if cfg.published is not None:
        ov["eos_comparison"]["published_path"] = cfg.published.path
        # a ratio quoted without its definition (the demo's talk): None keeps it out of the book
        ov["eos_comparison"]["talk_ratio"] = cfg.published.quoted_ratio
    else:
        ov["eos_comparison"]["talk_ratio"] = None
    absent: dict[str, str] = {}
    tel = cfg.telemetry
    if tel is None:
        absent["telemetry"] = _ABSENT["telemetry"].format(name=md_text(cfg.name))
    else:
        ov["telemetry"] = {
            "telemetry_source": "" if tel.synthetic else tel.source,
            "mlperf_log": tel.mlperf_log,
            "job_id": tel.job_id,
            "nodelist": tel.nodelist,
            "time_window": tel.time_window,
            "accelerator": cfg.accelerator,
        }
    if cfg.power is not None:  # its own MLPerf power results (`power:`, or beside `mlperf:`)
        ov["energy"]["power_dir"] = cfg.power
    if tel is not None and not tel.synthetic:  # GPU energy per run and phase from its telemetry
        ov["energy"] |= {
            "evaluated_name": cfg.name,
            "telemetry_source": tel.source,
            "telemetry_log": tel.mlperf_log,
            "job_id": tel.job_id,
            "nodelist": tel.nodelist,
            "time_window": tel.time_window,
        }
    if not cfg.sacct:
        absent["slurm_jobs"] = _ABSENT["slurm_jobs"].format(name=md_text(cfg.name))
        absent["reliability"] = _ABSENT["reliability"].format(name=md_text(cfg.name))
    elif not cfg.sacct_synthetic:
        ov["slurm_jobs"] = {
            "dump_paths": list(cfg.sacct),
            "synthetic": False,
            "gpus_per_node": cfg.gpus_per_node,
            "accelerator": cfg.accelerator,  # a gres/gpu type of another family is flagged
        }
        if cfg.nodes:
            ov["slurm_jobs"]["cluster_nodes"] = cfg.nodes
        if tel is not None and not tel.synthetic and Path(tel.source).exists():
            ov["slurm_jobs"]["telemetry_source"] = tel.source  # per-job GPU utilisation
        # reliability: the same dumps; DCGM error fields from the telemetry where it is a real file
        ov["reliability"] = {
            "dump_paths": list(cfg.sacct),
            "synthetic": False,
            "gpus_per_node": cfg.gpus_per_node,
        }
        if tel is not None and not tel.synthetic and Path(tel.source).exists():
            ov["reliability"]["telemetry_source"] = tel.source
    return ReportInputs(ov, absent, ref.mlperf)


def _tp_domain(cfg: ClusterConfig) -> str:
    """:func:`trainperf.topology.tp_domain_sentence` of the config's accelerator ("" when the
    accelerator table gives it no domain)."""
    total = cfg.nodes * cfg.gpus_per_node if cfg.nodes else None
    try:
        return tp_domain_sentence(
            cfg.accelerator, cfg.gpus_per_node, cfg.accelerator_table(), total_gpus=total
        )
    except ValueError:
        return ""


def _nvlink(cfg: ClusterConfig) -> bool:
    """Whether the config's accelerator's GPUs talk over NVLink inside a node (its
    ``scaleup_fabric`` in ``data/reference/accelerators.csv``): the chapters name NVLink, NVSwitch
    and NCCL only then (an AMD GPU's is Infinity Fabric and RCCL)."""
    try:
        d = scaleup_domain(cfg.accelerator, cfg.gpus_per_node, cfg.accelerator_table())
    except ValueError:
        return False
    return "nvlink" in (d.get("fabric") or "").lower()


def config_values(cfg: ClusterConfig) -> dict:
    """The config's values for the book (``values.config.*``) and which inputs were given
    (``values.inputs.*``, booleans that chapters test with Quarto's ``when-meta``).

    The strings are Markdown (:func:`trainperf.markup.md_text`; ``file`` an inline code span,
    :func:`trainperf.markup.md_code`): a config's name such as ``<script>`` or
    ``{{< include /etc/passwd >}}`` shows as those characters in the chapters."""
    src = {
        "mlperf": cfg.mlperf or "",
        "power": cfg.power or "",
        "published": cfg.published.path if cfg.published else "",
        "telemetry": (cfg.telemetry.source if cfg.telemetry else ""),
        "sacct": ", ".join(cfg.sacct),
        "reference_mlperf": cfg.reference.mlperf,
    }

    shown = {
        "name": cfg.name,
        "accelerator": cfg.accelerator,
        "gpus_per_node": cfg.gpus_per_node,
        "nodes": cfg.nodes if cfg.nodes else "n/a",
        "description": cfg.description or "n/a",
        "precision": (cfg.precision or "n/a").upper(),
        # where tensor parallelism can stay on NVLink: one node of an HGX board, or an NVL72 rack
        "tp_domain": _tp_domain(cfg),
        "language": cfg.language,
        # without `reference:` each result is compared like for like with the MLPerf record
        # (trainperf.compare.record_comparison): the book must not name the default's Eos
        "reference": (
            cfg.reference.name if cfg.reference.pinned else "the MLPerf record, like for like"
        ),
        "reference_round": cfg.reference.round
        or ("all rounds" if cfg.reference.pinned else "the newest round with a like result"),
        **{f"source_{k}": v or "not given" for k, v in src.items()},
    }
    # every string the config gives reaches the prose through {{< meta values.config.* >}}:
    # Markdown text that shows its characters, never markup or a Quarto shortcode
    # (trainperf.markup); the file name as an inline code span
    config = {k: md_text(v) if isinstance(v, str) else v for k, v in shown.items()}
    config["file"] = md_code(Path(cfg.source).name) if cfg.source else ""
    return {"config": config, "inputs": {**cfg.inputs(), "nvlink": _nvlink(cfg)}}
