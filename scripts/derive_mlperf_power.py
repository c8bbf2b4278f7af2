"""Derive data/reference/mlperf_power_runs.csv from MLCommons results mirrors (bare git dirs).

For each published power system below: extract its results folder with ``git archive`` into a
temporary folder (never into the repository), compute the energy to train of every run with
``trainperf.power.energy_to_train``, check each run and each score against mlcommons/logging's
result summarizer (``_compute_strong_score_standalone``; the script stops on any difference), and
write one row per run with its provenance (repository, commit, path, sha256 of the run's power logs).

Usage: .venv/bin/python scripts/derive_mlperf_power.py [MIRROR_ROOT]   (default /work/.mirror)
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import polars as pl
from mlperf_logging.result_summarizer import result_summarizer as rs

from trainperf.atomic import write_text_atomic
from trainperf.power import energy_to_train

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "reference" / "mlperf_power_runs.csv"

#: (mirror folder, GitHub repository, round, ruleset, submitter/systems path, system folder)
SYSTEMS = [
    ("mlcommons+training_results_v4.1", "mlcommons/training_results_v4.1", "v4.1", "4.1.0", "Dell", "8xXE9680x8H100-SXM-80GB-POWER"),
    ("mlcommons+training_results_v5.0", "mlcommons/training_results_v5.0", "v5.0", "5.0.0", "Lenovo", "SR780aV3-8xB200_SXM_180GB"),
]


def _sha256_of_files(files: list[Path]) -> str:
    """sha256 of a ``sha256sum``-style listing (``<sha256>  <name>`` per file, sorted by name)."""
    listing = "".join(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n" for f in sorted(files))
    return hashlib.sha256(listing.encode()).hexdigest()


def derive(mirror_root: Path) -> pl.DataFrame:
    rows = []
    for mirror, repo, rnd, ruleset, submitter, system in SYSTEMS:
        git_dir = mirror_root / mirror / "repo"
        commit = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        with tempfile.TemporaryDirectory() as tmp:
            paths = [f"{submitter}/results/{system}", f"{submitter}/systems/{system}.json"]
            tar = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit, *paths], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", tmp], input=tar.stdout, check=True)
            sysjson = json.loads((Path(tmp) / paths[1]).read_text())
            folder = Path(tmp) / paths[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = energy_to_train(folder)
            for s in res.scores.iter_rows(named=True):
                bench = folder / s["benchmark"]
                with contextlib.redirect_stdout(io.StringIO()):
                    _, tracks, _, summ, _ = rs._compute_strong_score_standalone(s["benchmark"], system, True, str(bench), "training", ruleset, return_full_scores=True)
                if not math.isclose(s["energy_to_train_j"], summ, rel_tol=1e-9):
                    sys.exit(f"{repo} {system}/{s['benchmark']}: {s['energy_to_train_j']} J != summarizer {summ} J")
                for r in res.runs.filter(pl.col("benchmark") == s["benchmark"]).sort("result_file").iter_rows(named=True):
                    if not math.isclose(r["energy_j"], tracks[r["result_file"]], rel_tol=1e-9):
                        sys.exit(f"{r['result_file']}: {r['energy_j']} J != summarizer {tracks[r['result_file']]} J")
                    name = Path(r["result_file"]).stem
                    power_files = sorted((bench / "power" / name).glob("*.txt"))
                    rel = f"{paths[0]}/{s['benchmark']}"
                    rows.append({
                        "round": rnd, "submitter": submitter, "system": system, "benchmark": s["benchmark"],
                        "accelerator_model_name": sysjson.get("accelerator_model_name"),
                        "n_nodes": int(sysjson["number_of_nodes"]), "n_accelerators": s["n_accelerators"],
                        "result": name, "time_to_train_min": r["time_to_train_min"], "energy_j": r["energy_j"],
                        "node_energy_j": r["node_energy_j"], "interconnect_energy_j": r["interconnect_energy_j"],
                        "mean_power_kw": r["mean_power_kw"], "in_score": r["in_score"], "scaling_factor": s["scaling_factor"],
                        "score_min": s["score_min"], "energy_to_train_j": s["energy_to_train_j"],
                        "summarizer_energy_to_train_j": summ,
                        "power_logs_sha256": _sha256_of_files(power_files),
                        "source": f"https://github.com/{repo}/tree/{commit}/{rel} (result {name}.txt, power/{name}/: "
                                  f"{', '.join(p.name for p in power_files)}); energy by trainperf.power.energy_to_train, "
                                  f"equal to mlcommons/logging {rs.__name__} (mlperf-logging package) ruleset {ruleset}",
                    })
    return pl.DataFrame(rows)


def main() -> int:
    mirror_root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/.mirror")
    frame = derive(mirror_root)
    write_text_atomic(frame.write_csv(float_precision=None), OUT)
    print(f"{frame.height} runs -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
