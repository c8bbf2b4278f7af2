"""Helpers the tests import (``from helpers import ...``): the bundled data's paths and writers of
small synthetic MLPerf logs. Fixtures stay in ``conftest.py``; pytest imports that itself."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from trainperf import dcgm

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
MLPERF = DATA / "mlperf"

#: The logged GPT-3 hyperparameters mlperf-logging's ``training_4.1.0/closed_gpt3.yaml`` pins (its
#: ``CHECK v['value'] == ...`` lines, read by hand): max_sequence_length 2048, opt_name 'adam',
#: opt_base_learning_rate 2e-5 or 3e-5, opt_learning_rate_decay_schedule, opt_adam_beta_1 0.9,
#: opt_adam_beta_2 0.95, opt_adam_epsilon 1e-8, opt_gradient_clip_norm 1.0; in the logs' order.
GPT3_FIXED_BY_RULES = [
    "max_sequence_length",
    "opt_name",
    "opt_base_learning_rate",
    "opt_learning_rate_decay_schedule",
    "opt_adam_beta_1",
    "opt_adam_beta_2",
    "opt_adam_epsilon",
    "opt_gradient_clip_norm",
]


def mllog(key, value=None, time_ms=0, metadata=None, event_type="POINT_IN_TIME") -> str:
    """One ``:::MLLOG`` line as the mlperf_logging.mllog library writes it."""
    payload = {
        "namespace": "",
        "time_ms": time_ms,
        "event_type": event_type,
        "key": key,
        "value": value,
        "metadata": {"file": "train.py", "lineno": 1, **(metadata or {})},
    }
    return ":::MLLOG " + json.dumps(payload)


def gpt3_run(t0=1_700_000_000_000, minutes=10.0, n_evals=3, status="success", seed=1) -> list[str]:
    """A minimal, well-formed gpt3 run: run_start at t0, evals every 50,331,648 tokens, run_stop."""
    lines = [
        mllog("submission_benchmark", "gpt3", t0 - 5000),
        mllog("global_batch_size", 2048, t0 - 4000),
        mllog("max_sequence_length", 2048, t0 - 4000),
        mllog("seed", seed, t0 - 4000),
        mllog("init_start", None, t0 - 3000, event_type="INTERVAL_START"),
        mllog("init_stop", None, t0 - 10, event_type="INTERVAL_END"),
        mllog("run_start", None, t0, event_type="INTERVAL_START"),
    ]
    step = minutes * 60_000 / n_evals
    for i in range(1, n_evals + 1):
        lines.append(
            mllog(
                "eval_accuracy",
                2.75 - 0.03 * i,
                int(t0 + i * step - 1),
                {"epoch_num": 50331648 * i},
            )
        )
    lines.append(
        mllog("run_stop", None, int(t0 + minutes * 60_000), {"status": status}, "INTERVAL_END")
    )
    return lines


def main_job_languages(main_job) -> set[str]:
    """The figure languages the session's :func:`main_job` wrote: ``ja`` only where it found a CJK
    font when it ran (otherwise its log says "Japanese figures skipped: ..."). Tests that read its
    figures ask this, never the machine's state now: a font installed since changes that, not the
    figures the job made."""
    tmp, _ = main_job
    text = (tmp / "run_output.txt").read_text()
    skipped = any(ln.startswith("Japanese figures skipped:") for ln in text.splitlines())
    return {"en"} if skipped else {"en", "ja"}


def load_results_warned(root):
    """``mlperf.load_results(root)`` and the messages of every warning it gave."""
    from trainperf import mlperf  # noqa: PLC0415 - only the MLPerf damage tests need it

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = mlperf.load_results(root)
    return r, [str(x.message) for x in w]


def read_exposition_warned(path: Path):
    """``dcgm.read_exposition_reading(path)`` and the messages of the DcgmWarnings it gave."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = dcgm.read_exposition_reading(path)
    return r, [str(x.message) for x in w if issubclass(x.category, dcgm.DcgmWarning)]


def quality_by_check(reading) -> dict[str, dict]:
    """A reading's quality rows keyed by their ``check``."""
    return {row["check"]: row for row in reading.quality.iter_rows(named=True)}


def notebook_cell(notebook: str, marker: str) -> str:
    """The source of the first code cell of ``notebooks/<notebook>`` that contains ``marker`` (a
    ``#| label: ...`` line or a call the cell makes), for running one cell of the project's own
    notebook in a test."""
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "code" and marker in src:
            return src
    raise AssertionError(f"no cell of {notebook} contains {marker!r}")
