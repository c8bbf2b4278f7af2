"""The cluster config: one YAML file naming the evaluated cluster and the inputs the report reads.

Checked by a small validator of our own (a dozen keys, one level of nesting): the messages must
name the key in one line (``telemetry.mlperf_log: no such file or folder: ...``), which a schema
library's generic messages do not, and the environment has no pydantic. Every relative path is
taken from the folder of the config file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from trainperf import project_root
from trainperf.config.yamlfile import load_yaml_file
from trainperf.errors import ConfigError, InputError
from trainperf.flops import load_accelerators, resolve_accelerator
from trainperf.mlperf import find_result_files
from trainperf.mlperf.checks import check_results_folder
from trainperf.mlperf.loader import layout_from_path  # the loader's own rule, so both agree

__all__ = [
    "LANGUAGES",
    "PRECISIONS",
    "SYNTHETIC",
    "AcceleratorSpec",
    "ClusterConfig",
    "PublishedInput",
    "ReferenceInput",
    "TelemetryInput",
    "load_config",
    "parse_config",
]

LANGUAGES = ("en", "ja")
PRECISIONS = ("bf16", "fp8", "fp4")
SYNTHETIC = "synthetic"
"""Value of ``telemetry.source`` or ``sacct`` that asks for the generated demo data (the demo
config uses it; the book marks every number from it as synthetic)."""


@dataclass(frozen=True)
class TelemetryInput:
    """``telemetry:``: DCGM telemetry of one MLPerf run.

    Attributes:
        source: exposition file, Parquet store folder, ``http(s)://`` Prometheus URL, or
            ``"synthetic"``.
        mlperf_log: the ``result_*.txt`` of the run the telemetry covers (its phases).
        job_id: Slurm job id of that run ("" if the telemetry holds one job only).
        nodelist: Slurm host list for telemetry without job labels ("" if none).
        time_window: ``START/END`` in ISO 8601 ("" if none).
    """

    source: str
    mlperf_log: str
    job_id: str = ""
    nodelist: str = ""
    time_window: str = ""

    @property
    def synthetic(self) -> bool:
        return self.source == SYNTHETIC


@dataclass(frozen=True)
class PublishedInput:
    """``published:``: the evaluated system's self-reported rows in the layout of
    ``data/reference/published_results.csv`` (rows whose ``system`` is the config's ``name``).

    Attributes:
        path: the CSV of published rows.
        quoted_ratio: a per-GPU ratio to the reference quoted somewhere without its definition
            (``published.quoted_ratio``; the demo: 1.28, the SAKURAONE talk at Cloud Operator Days
            Tokyo 2025); the book places it against the rows and lists what it can mean. None (not
            given): no quoted ratio anywhere in the book.
    """

    path: str
    quoted_ratio: float | None = None


@dataclass(frozen=True)
class ReferenceInput:
    """``reference:``: the reference system and its MLPerf logs.

    Attributes:
        name: how the book names it (default ``Eos``).
        mlperf: results folder of its logs (default: the bundled Eos logs, ``data/mlperf``).
        round: only this MLPerf round counts as measured (e.g. ``v4.1``, the round the SAKURAONE
            paper compared against); None: every round.
        precision: datatype its runs trained in (default ``fp8``: every NVIDIA-stack H100 MLPerf
            GPT-3 submission trained in FP8).
        pinned: the config has a ``reference:`` section: the comparison is against these logs;
            without one (False) each result is compared like for like with the MLPerf record
            (``data/reference/mlperf_record.csv``, :mod:`trainperf.compare.record_comparison`).
        submitter, system, accelerator: results of the MLPerf record as the reference (with
            ``round``, case-insensitive; ``accelerator`` the canonical name or the systems JSON's
            text) instead of a folder of logs; None: not pinned to the record.
    """

    name: str = "Eos"
    mlperf: str = ""
    round: str | None = None
    precision: str = "fp8"
    pinned: bool = False
    submitter: str | None = None
    system: str | None = None
    accelerator: str | None = None

    @property
    def from_record(self) -> bool:
        """The reference is results of the MLPerf record (``submitter``, ``system`` or
        ``accelerator`` given, with ``round`` if given), not a folder of logs."""
        return any(v is not None for v in (self.submitter, self.system, self.accelerator))

    def record_filter(self, record):
        """The rows of ``record`` (:func:`trainperf.record.read_record`) this reference pins."""
        import polars as pl  # noqa: PLC0415 - the config's dataclasses load without polars

        keep = pl.lit(True)
        for col, v in (("round", self.round), ("submitter", self.submitter),
                       ("system", self.system)):  # fmt: skip
            if v is not None:
                keep = keep & (pl.col(col).str.to_lowercase() == v.lower())
        if self.accelerator is not None:
            keep = keep & (
                (pl.col("accelerator").str.to_lowercase() == self.accelerator.lower())
                | (pl.col("accelerator_model_name").str.to_lowercase() == self.accelerator.lower())
            )
        return record.filter(keep)


@dataclass(frozen=True)
class AcceleratorSpec:
    """``accelerator:`` given as a mapping: an accelerator outside ``data/reference/accelerators.csv``.

    Attributes:
        name: how the book names it (e.g. ``MI355X``).
        memory_gb: memory per GPU, decimal GB (the memory model's capacity).
        bf16_dense_tflops: dense (no 2:4 sparsity) BF16 tensor peak, TFLOP/s.
        fp8_dense_tflops: dense FP8 tensor peak, TFLOP/s (None: no FP8).
        source: where the figures come from (a datasheet URL), shown with them.
    """

    name: str
    memory_gb: float
    bf16_dense_tflops: float
    fp8_dense_tflops: float | None
    source: str

    def row(self) -> dict:
        """The accelerator as a row of :func:`trainperf.flops.load_accelerators`."""
        return {
            "accelerator": self.name,
            "aliases": "",
            "bf16_dense_tflops": self.bf16_dense_tflops,
            "fp8_dense_tflops": self.fp8_dense_tflops,
            "memory_gb": self.memory_gb,
            "memory_bandwidth_tbps": None,
            "fp4_dense_tflops": None,
            "fp4_format": None,
            "scaleup_domain": None,
            "scaleup_fabric": None,
            "source_url": self.source,
        }


@dataclass(frozen=True)
class ClusterConfig:
    """A validated cluster config (:func:`load_config`). Paths are absolute strings.

    Attributes:
        name: the evaluated cluster's name, as the book shows it.
        accelerator: canonical name from ``data/reference/accelerators.csv``, or the name of
            ``accelerator_spec``.
        gpus_per_node: GPUs per node (node counts of the comparison are GPUs / this).
        nodes: nodes of the cluster (None if not given; Slurm occupancy needs it).
        description: free text (interconnect, software), "" if none.
        precision: datatype the evaluated MLPerf runs trained in (None: unknown, both peaks).
        language: ``en`` or ``ja``, the language of the figures shown first.
        mlperf: results folder of the evaluated system's MLPerf logs (None if not given).
        power: folder of the evaluated system's MLPerf power results: benchmark folders holding
            ``result_*.txt`` and ``power/result_*/node_*.txt`` (the MLCommons layout,
            ``results/<system>/<benchmark>/power/``) at or under it. From ``power:``, else the
            ``mlperf:`` folder where power results lie under it (MLCommons publishes them beside
            the result files); ``power: false`` turns that off. None: no power result.
        published: published rows of the evaluated system (None if not given).
        telemetry, sacct: the other inputs (None / empty if not given; ``sacct`` may be
            ``("synthetic",)``).
        reference: the reference system.
        source: the config file read ("" when built from a mapping).
        accelerator_spec: the accelerator described in the config (``accelerator:`` given as a
            mapping with ``name``, ``memory_gb``, ``bf16_dense_tflops``, ``fp8_dense_tflops``,
            ``source``), None when it is a name from the table.
    """

    name: str
    accelerator: str
    gpus_per_node: int
    nodes: int | None = None
    description: str = ""
    precision: str | None = None
    language: str = "en"
    mlperf: str | None = None
    power: str | None = None
    published: PublishedInput | None = None
    telemetry: TelemetryInput | None = None
    sacct: tuple[str, ...] = ()
    reference: ReferenceInput = field(default_factory=ReferenceInput)
    source: str = ""
    accelerator_spec: AcceleratorSpec | None = None

    def accelerator_table(self):
        """The accelerator table with the config's own accelerator (:class:`AcceleratorSpec`)
        in place of any row of the same name: what MFU and the memory model read."""

        table = load_accelerators()
        if self.accelerator_spec is None:
            return table
        own = pl.DataFrame([self.accelerator_spec.row()], schema=table.schema)
        return pl.concat([table.filter(pl.col("accelerator") != self.accelerator_spec.name), own])

    @property
    def gpu_memory_gb(self) -> float:
        """Memory per GPU of the config's accelerator, decimal GB."""

        t = self.accelerator_table()
        return float(t.filter(pl.col("accelerator") == self.accelerator)["memory_gb"][0])

    @property
    def sacct_synthetic(self) -> bool:
        return self.sacct == (SYNTHETIC,)

    def inputs(self) -> dict[str, bool]:
        """Which inputs were given: the ``values.inputs`` flags chapters test with ``when-meta``."""
        return {
            "mlperf": self.mlperf is not None,
            "power": self.power is not None,
            "published": self.published is not None,
            "quoted_ratio": self.published is not None and self.published.quoted_ratio is not None,
            "evaluated": self.mlperf is not None or self.published is not None,
            "telemetry": self.telemetry is not None,
            "telemetry_synthetic": self.telemetry is not None and self.telemetry.synthetic,
            "telemetry_real": self.telemetry is not None and not self.telemetry.synthetic,
            "sacct": bool(self.sacct),
            "sacct_synthetic": self.sacct_synthetic,
            "sacct_real": bool(self.sacct) and not self.sacct_synthetic,
            "nodes": self.nodes is not None,
            # the reference is a pinned folder of logs (the demo's Eos): its own tables (its runs,
            # its scaling) are shown; otherwise the MLPerf record is, and no Eos-only table
            "reference_logs": self.reference.pinned and not self.reference.from_record,
        }


# --------------------------------------------------------------------------- validation

_TOP = {
    "name",
    "accelerator",
    "gpus_per_node",
    "nodes",
    "description",
    "precision",
    "language",
    "mlperf",
    "power",
    "published",
    "telemetry",
    "sacct",
    "reference",
}
_REQUIRED = ("name", "accelerator", "gpus_per_node")
_TELEMETRY = {"source", "mlperf_log", "job_id", "nodelist", "time_window"}
_REFERENCE = {"name", "mlperf", "round", "precision", "submitter", "system", "accelerator"}
_PUBLISHED = {"path", "quoted_ratio"}


def _unknown(keys, allowed: set[str], where: str) -> None:
    bad = sorted(str(k) for k in keys if k not in allowed)
    if bad:
        raise ConfigError(f"{where}{bad[0]}: unknown key; allowed: {', '.join(sorted(allowed))}")


def _text(value: Any, key: str, allow_empty: bool = False) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{key}: expected text, got {type(value).__name__}")
    text = str(value).strip()
    if not text and not allow_empty:
        raise ConfigError(f"{key}: must not be empty")
    return text


def _int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{key}: expected a whole number >= 1, got {value!r}")
    return value


def _choice(value: Any, key: str, choices: tuple[str, ...]) -> str:
    text = _text(value, key).lower()
    if text not in choices:
        raise ConfigError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
    return text


def _path(value: Any, key: str, base: Path, url_ok: bool = False) -> str:
    text = _text(value, key)
    if url_ok and text.startswith(("http://", "https://")):
        return text
    try:
        p = Path(text).expanduser()
        p = p if p.is_absolute() else base / p
        if not p.exists():
            raise ConfigError(f"{key}: no such file or folder: {text}")
        return str(p.resolve())
    except (OSError, ValueError, RuntimeError) as exc:  # a name too long, a NUL byte, ~nobody
        if isinstance(exc, ConfigError):
            raise
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise ConfigError(f"{key}: not a usable path ({type(exc).__name__}): {shown}") from None


def _results(value: Any, key: str, base: Path) -> str:

    path = _path(value, key, base)
    try:
        check_results_folder(path)  # `mlperf: /` refused before any walk
    except InputError as exc:
        raise ConfigError(f"{key}: {exc}") from None
    if Path(path).is_file():
        found = [path]
    else:  # the first result file is enough to know there is one: the walk stops there
        found = [next(_result_names(Path(path)), None)] if Path(path).is_dir() else []
        found = [f for f in found if f is not None]
    if not found:
        raise ConfigError(f"{key}: no MLPerf result file (result_*.txt) under {value}")
    return path


def _power(value: Any, key: str, base: Path) -> str:
    """A folder with MLPerf power results at or under it (:func:`trainperf.power.find_power_folders`)."""
    from trainperf.power import find_power_folders  # noqa: PLC0415 - only with power results

    path = _path(value, key, base)
    if not find_power_folders(path):
        raise ConfigError(
            f"{key}: no MLPerf power result under {value} (a benchmark folder holding result_*.txt "
            "and power/result_*/node_*.txt, as in <submitter>/results/<system>/<benchmark>/power/)"
        )
    return path


def _power_beside(mlperf: str) -> str | None:
    """The ``mlperf:`` folder when MLPerf power results lie under it (else None)."""
    from trainperf.power import find_power_folders  # noqa: PLC0415 - only with MLPerf logs

    return mlperf if find_power_folders(mlperf) else None


def _result_names(folder: Path):
    """Paths under ``folder`` named like a result file (``result_*.txt``, ``.txt.gz``), lazily."""
    for dirpath, dirs, files in os.walk(folder):
        for f in [*files, *dirs]:  # a folder named like one is reported by the loader
            if f.startswith("result_") and (f.endswith(".txt") or f.endswith(".txt.gz")):
                yield Path(dirpath) / f


def log_rounds(folder: str | Path) -> list[str]:
    """The MLPerf rounds (``v4.1``) of the result files under ``folder``, as
    :func:`trainperf.mlperf.load_results` assigns them (a folder named like ``v4.1`` or
    ``training_results_v4.1`` above ``<submitter>/results/``), sorted as version numbers."""

    try:
        found = find_result_files(folder)
    except FileNotFoundError:
        return []
    rounds = {layout_from_path(p)["round"] for p in found} - {None}
    return sorted(rounds, key=lambda r: tuple(int(x) for x in r.lstrip("v").split(".")))


def _record_round(value: Any) -> str:
    text = _text(value, "reference.round")
    return text if text.startswith("v") else f"v{text}"


def _check_record_pin(ref: ReferenceInput) -> None:
    """A reference pinned to the record must match some of its results (else one clear line)."""
    from trainperf.record import read_record  # noqa: PLC0415 - only for a record pin

    record = read_record()
    if not ref.record_filter(record).height:
        what = ", ".join(
            f"{k} {v!r}"
            for k, v in (("round", ref.round), ("submitter", ref.submitter), ("system", ref.system),
                         ("accelerator", ref.accelerator))
            if v is not None
        )  # fmt: skip
        raise ConfigError(
            f"reference: no result of the MLPerf record (data/reference/mlperf_record.csv) has "
            f"{what}; its rounds: {', '.join(sorted(set(record['round'])))}"
        )


def _round(value: Any, folder: str) -> str:
    text = _text(value, "reference.round")
    want = text if text.startswith("v") else f"v{text}"
    have = log_rounds(folder)
    if want not in have:
        known = ", ".join(have) if have else "none (no folder named like v4.1 above the logs)"
        raise ConfigError(
            f"reference.round: {text!r} is not a round of the reference logs ({folder}); "
            f"their rounds: {known}"
        )
    return want


def _mapping(value: Any, key: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: expected a mapping of keys, got {type(value).__name__}")
    return value


_ACCELERATOR = {"name", "memory_gb", "bf16_dense_tflops", "fp8_dense_tflops", "source"}


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{key}: expected a number > 0, got {value!r}")
    return float(value)


def _accelerator_spec(value: dict) -> AcceleratorSpec:
    _unknown(value, _ACCELERATOR, "accelerator.")
    for key in ("name", "memory_gb", "bf16_dense_tflops", "source"):
        if value.get(key) is None:
            raise ConfigError(
                f"accelerator.{key}: required key missing (an accelerator described in the config needs name, memory_gb, bf16_dense_tflops and source)"
            )
    fp8 = value.get("fp8_dense_tflops")
    return AcceleratorSpec(
        name=_text(value["name"], "accelerator.name"),
        memory_gb=_number(value["memory_gb"], "accelerator.memory_gb"),
        bf16_dense_tflops=_number(value["bf16_dense_tflops"], "accelerator.bf16_dense_tflops"),
        fp8_dense_tflops=None if fp8 is None else _number(fp8, "accelerator.fp8_dense_tflops"),
        source=_text(value["source"], "accelerator.source"),
    )


def _accelerator(value: Any) -> str:

    name = _text(value, "accelerator")
    try:
        return resolve_accelerator(name, load_accelerators())
    except ValueError:
        known = ", ".join(load_accelerators()["accelerator"].to_list())
        raise ConfigError(
            f"accelerator: {name!r} is not in data/reference/accelerators.csv; known: {known} "
            "(or describe it: accelerator: {name, memory_gb, bf16_dense_tflops, fp8_dense_tflops, source})"
        ) from None


def parse_config(data: Any, base: str | Path, source: str = "") -> ClusterConfig:
    """Validate a config mapping (as YAML gives it) and return the :class:`ClusterConfig`.

    Args:
        data: the mapping.
        base: folder relative paths are taken from (the config file's folder).
        source: the file it came from, kept in :attr:`ClusterConfig.source`.

    Raises:
        ConfigError: one line naming the key: an unknown key, a missing required key, a value of
            the wrong type, a path that does not exist, an accelerator not in
            ``data/reference/accelerators.csv``, a ``power:`` folder without MLPerf power results.
    """

    base = Path(base)
    if data is None:
        data = {}
    data = _mapping(data, "config")
    _unknown(data, _TOP, "")
    for key in _REQUIRED:
        if key not in data or data[key] is None:
            raise ConfigError(f"{key}: required key missing")
    spec = _accelerator_spec(data["accelerator"]) if isinstance(data["accelerator"], dict) else None
    kw: dict[str, Any] = {
        "name": _text(data["name"], "name"),
        "accelerator": spec.name if spec else _accelerator(data["accelerator"]),
        "accelerator_spec": spec,
        "gpus_per_node": _int(data["gpus_per_node"], "gpus_per_node"),
        "source": source,
    }
    if data.get("nodes") is not None:
        kw["nodes"] = _int(data["nodes"], "nodes")
    if data.get("description") is not None:
        kw["description"] = _text(data["description"], "description", allow_empty=True)
    if data.get("precision") is not None:
        kw["precision"] = _choice(data["precision"], "precision", PRECISIONS)
    if data.get("language") is not None:
        kw["language"] = _choice(data["language"], "language", LANGUAGES)
    if data.get("mlperf") is not None:
        kw["mlperf"] = _results(data["mlperf"], "mlperf", base)
    power = data.get("power")
    if power is False:  # `power: false`: no power result, not even beside the MLPerf logs
        pass
    elif power is not None:
        if power is True:
            raise ConfigError(
                "power: expected a folder of MLPerf power results (or false), got True"
            )
        kw["power"] = _power(power, "power", base)
    elif kw.get("mlperf") is not None and Path(kw["mlperf"]).is_dir():
        kw["power"] = _power_beside(kw["mlperf"])
    if data.get("published") is not None:
        pub = data["published"]
        if isinstance(pub, str):
            pub = {"path": pub}
        pub = _mapping(pub, "published")
        _unknown(pub, _PUBLISHED, "published.")
        if "path" not in pub:
            raise ConfigError("published.path: required key missing")
        quoted = pub.get("quoted_ratio")
        kw["published"] = PublishedInput(
            _path(pub["path"], "published.path", base),
            None if quoted is None else _number(quoted, "published.quoted_ratio"),
        )
    if data.get("telemetry") is not None:
        tel = _mapping(data["telemetry"], "telemetry")
        _unknown(tel, _TELEMETRY, "telemetry.")
        for key in ("source", "mlperf_log"):
            if tel.get(key) is None:
                raise ConfigError(f"telemetry.{key}: required key missing")
        src = _text(tel["source"], "telemetry.source")
        kw["telemetry"] = TelemetryInput(
            source=src if src == SYNTHETIC else _path(src, "telemetry.source", base, url_ok=True),
            mlperf_log=_path(tel["mlperf_log"], "telemetry.mlperf_log", base),
            **{
                k: _text(tel[k], f"telemetry.{k}", allow_empty=True)
                for k in ("job_id", "nodelist", "time_window")
                if tel.get(k) is not None
            },
        )
    if data.get("sacct") is not None:
        sacct = data["sacct"]
        if sacct == SYNTHETIC:
            kw["sacct"] = (SYNTHETIC,)
        else:
            if isinstance(sacct, str):
                sacct = [sacct]
            if not isinstance(sacct, list) or not sacct:
                raise ConfigError("sacct: expected a list of sacct dumps (or 'synthetic')")
            kw["sacct"] = tuple(_path(p, f"sacct[{i}]", base) for i, p in enumerate(sacct))
            if kw.get("nodes") is None:
                raise ConfigError(
                    "nodes: required with sacct dumps (the occupancy table needs the cluster's size)"
                )
    ref = data.get("reference")
    ref = {} if ref is None else _mapping(ref, "reference")
    _unknown(ref, _REFERENCE, "reference.")
    kw_ref_mlperf = (
        _results(ref["mlperf"], "reference.mlperf", base)
        if ref.get("mlperf") is not None
        else str(project_root() / "data" / "mlperf")
    )
    pins = {k: _text(ref[k], f"reference.{k}") for k in ("submitter", "system", "accelerator")
            if ref.get(k) is not None}  # fmt: skip
    if pins and ref.get("mlperf") is not None:
        raise ConfigError(
            "reference: give mlperf (a folder of logs) or submitter/system/accelerator (results of "
            "the MLPerf record), not both"
        )
    rnd = None
    if ref.get("round") is not None:
        rnd = _record_round(ref["round"]) if pins else _round(ref["round"], kw_ref_mlperf)
    kw["reference"] = ReferenceInput(
        name=_text(ref.get("name", "Eos"), "reference.name"),
        mlperf=kw_ref_mlperf,
        round=rnd,
        precision=_choice(ref.get("precision", "fp8"), "reference.precision", PRECISIONS),
        pinned=data.get("reference") is not None,
        **pins,
    )
    if pins:
        _check_record_pin(kw["reference"])
    return ClusterConfig(**kw)


def load_config(path: str | Path) -> ClusterConfig:
    """Read and validate a cluster config file (YAML).

    Raises:
        ConfigError: the file is missing, a folder, empty, not UTF-8, not YAML or has a key twice
            (:func:`trainperf.config.yamlfile.load_yaml_file`), or :func:`parse_config` refuses
            it; the message is one line and names the key (and the file, and the line).
    """

    path = Path(path)
    data = load_yaml_file(path, "config")
    if data is None:
        raise ConfigError(
            f"config {path}: the file is empty (no keys); `trainperf init FILE` writes a template"
        )
    try:
        return parse_config(data, path.parent.resolve(), str(path))
    except ConfigError as exc:
        raise ConfigError(f"config {path}: {exc}") from None
