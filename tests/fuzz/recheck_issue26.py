"""Re-check every case of issue 26 end to end on the current tree, one line per case (PASS/FAIL
and the number it got). Independent of the unit tests: each input is built here and goes through
the public API or the command line.

Usage::

    nice -n 10 .venv/bin/python tests/fuzz/recheck_issue26.py            # all cases
    nice -n 10 .venv/bin/python tests/fuzz/recheck_issue26.py --mb 100   # MLPerf log size (MB)

The 1 GB MLPerf log of the issue is checked on a smaller file (``--mb``, default 100) in a child
process: its peak RSS and time, and the same for a file half the size (both above the parser's 32-MB piece), so that the growth
per MB can be extrapolated to 1 GB (a reader whose memory follows what it keeps, not the file,
grows by almost nothing). Exit status 1 when a case fails.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import polars as pl  # noqa: E402
import pypandoc  # noqa: E402
from conftest import MLPERF, gpt3_run, mllog  # noqa: E402

from trainperf import dcgm, mlperf, slurm, telemetry  # noqa: E402
from trainperf.config import yamlfile  # noqa: E402
from trainperf.errors import ConfigError, InputError  # noqa: E402
from trainperf.report import job as report  # noqa: E402
from trainperf.report.display import table  # noqa: E402

T0_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
MODEL = 'modelName="NVIDIA H100 80GB HBM3"'
RESULTS: list[tuple[bool, str]] = []


def case(ok: bool, text: str) -> None:
    RESULTS.append((bool(ok), text))
    print(f"{'PASS' if ok else 'FAIL'}  {text}", flush=True)


def quiet(fn, *a, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn(*a, **kw)
    return out, [str(x.message) for x in w]


def sample(field, host, value, ms=None, uuid="GPU-a", gpu=0):
    ts = f" {ms}" if ms is not None else ""
    return f'{field}{{gpu="{gpu}",UUID="{uuid}",{MODEL},Hostname="{host}"}} {value}{ts}'


def mean_power(r) -> float:
    f = r.frame().filter(pl.col("field") == "DCGM_FI_DEV_POWER_USAGE")
    # per GPU first, then over GPUs (the book's per-GPU statistic)
    return float(f.group_by("uuid").agg(pl.col("value").mean())["value"].mean())


def dcgm_cases(tmp: Path) -> None:
    # 1. one GPU under two host spellings: 350 W, 1 GPU (was 433 W as three GPUs)
    lines = []
    for i in range(3):
        for h in ("n1", "n1.cluster.local"):
            lines.append(sample("DCGM_FI_DEV_POWER_USAGE", h, 350.0, T0_MS + 15_000 * i))
    lines.append(sample("DCGM_FI_DEV_POWER_USAGE", "n2", 300.0, T0_MS, uuid="GPU-b"))
    p = tmp / "alias.prom"
    p.write_text("\n".join(lines) + "\n")
    r, _ = quiet(dcgm.read_exposition_reading, p)
    n = r.frame().select("uuid").n_unique()
    case(n == 2 and mean_power(r) == 325.0,
         f"UUID identity: {n} GPUs, mean of per-GPU power {mean_power(r):g} W (expect 2, 325)")  # fmt: skip
    # 2. two exporters 10 s apart: one GPU 350 W every 15 s from A; B the same GPU 10 s later at
    # 400 W; the power of the GPU is A's series (the most samples), not the mix
    lines = []
    for i in range(20):
        lines.append(sample("DCGM_FI_DEV_POWER_USAGE", "n1", 350.0 + (i % 2), T0_MS + 15_000 * i))
    for i in range(19):
        lines.append(sample("DCGM_FI_DEV_POWER_USAGE", "n1b", 360.0 + (i % 2),
                            T0_MS + 15_000 * i + 10_000))  # fmt: skip
    p = tmp / "two.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = quiet(dcgm.read_exposition_reading, p)
    case(r.samples.height == 20 and abs(mean_power(r) - 350.5) < 1e-9,
         f"two exporters 10 s apart: {r.samples.height} samples, {mean_power(r):g} W "
         "(expect 20, 350.5)")  # fmt: skip
    # 3. timestamps in seconds (exposition) and milliseconds (Prometheus API)
    p = tmp / "sec.prom"
    p.write_text(sample("DCGM_FI_DEV_POWER_USAGE", "n1", 300, T0_MS // 1000) + "\n")
    r, _ = quiet(dcgm.read_exposition_reading, p)
    y = r.frame()["timestamp"].dt.year().to_list()
    case(y == [2026], f"exposition seconds: year {y} (expect [2026])")
    api = {"status": "success", "data": {"resultType": "matrix", "result": [{
        "metric": {"__name__": "DCGM_FI_DEV_POWER_USAGE", "gpu": "0", "UUID": "GPU-a",
                   "Hostname": "n1"}, "values": [[T0_MS, "300"], [T0_MS + 15000, "301"]]}]}}  # fmt: skip
    p = tmp / "api.json"
    p.write_text(json.dumps(api))
    r, _ = quiet(dcgm.read_prometheus_api, p)
    y = r["timestamp"].dt.year().to_list() if isinstance(r, pl.DataFrame) else None
    case(y == [2026, 2026], f"Prometheus API milliseconds: years {y} (expect 2026)")
    # 4. frozen after an nv-hostengine restart: 619.15 W x 20 not used
    power = [600.5, 601.0, 612.25, 620.0] + [619.15] * 20
    lines = []
    for i, pw in enumerate(power):
        lines += [str(T0_MS // 1000 + 15 * i), sample("DCGM_FI_DEV_POWER_USAGE", "n1", pw),
                  sample("DCGM_FI_DEV_GPU_UTIL", "n1", 97 if i >= 4 else 95 + i)]  # fmt: skip
    p = tmp / "frozen.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = quiet(dcgm.read_exposition_reading, p)
    cov = dcgm.coverage(r.frame(), 15, start=T0_MS // 1000, end=T0_MS // 1000 + 15 * 23)
    case(abs(mean_power(r) - 608.4375) < 1e-9 and max(cov["coverage"]) < 0.2
         and any("frozen.prom:" in m for m in msgs),
         f"frozen power: {mean_power(r):g} W (expect 608.4375), coverage "
         f"{[round(c, 3) for c in cov['coverage']]} (expect 0.167)")  # fmt: skip
    # 4b. per field: util and tensor frozen while power and GR move
    lines = []
    for i in range(24):
        lines += [str(T0_MS // 1000 + 15 * i),
                  sample("DCGM_FI_DEV_POWER_USAGE", "n1", 600 + 1.5 * (i % 7) + 0.25 * i),
                  sample("DCGM_FI_DEV_GPU_UTIL", "n1", [95, 96, 98, 99][i] if i < 4 else 60),
                  sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "n1",
                         [0.61, 0.63, 0.60, 0.62][i] if i < 4 else 0.9),
                  sample("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "n1", 0.70 + 0.01 * (i % 5))]  # fmt: skip
    p = tmp / "fields.prom"
    p.write_text("\n".join(lines) + "\n")
    r, msgs = quiet(dcgm.read_exposition_reading, p)
    f = r.frame()
    u = f.filter(pl.col("field") == "DCGM_FI_DEV_GPU_UTIL")["value"].mean()
    t = f.filter(pl.col("field") == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")["value"].mean()
    case(u == 97 and abs(t - 0.615) < 1e-9 and any("fields.prom:23" in m for m in msgs),
         f"per-field staleness: util {u:g} % (expect 97, not 66.17), tensor {t:g} "
         "(expect 0.615, not 0.8525), warning at fields.prom:23")  # fmt: skip
    # 5. NaN/Inf and MIG warned with file and line
    p = tmp / "nan.prom"
    p.write_text(f"{T0_MS // 1000}\n" + sample("DCGM_FI_DEV_POWER_USAGE", "n1", "NaN") + "\n"
                 + 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-a",GPU_I_ID="1",'
                 'Hostname="n1"} 0.5\n')  # fmt: skip
    r, msgs = quiet(dcgm.read_exposition_reading, p)
    case(any("nan.prom:2" in m and "non_finite" in m for m in msgs)
         and any("nan.prom:3" in m and "mig_instance" in m for m in msgs),
         "NaN and MIG rows: warnings name nan.prom:2 and nan.prom:3")  # fmt: skip


def mlperf_cases(tmp: Path) -> None:
    lora = MLPERF / "v4.1" / "NVIDIA" / "results" / "eos_n8_ngc24.09_nemo" / "llama2_70b_lora"
    # duplicated eval block with other values
    lines = gpt3_run(minutes=10.0)
    stop = lines.pop()
    t = 1_700_000_000_000 + 600_000 - 2
    lines += [mllog("eval_accuracy", 2.75, t, {"epoch_num": 50331648 * 2}),
              mllog("eval_accuracy", 2.80, t + 1, {"epoch_num": 50331648 * 3}), stop]  # fmt: skip
    d = tmp / "evals"
    d.mkdir()
    (d / "result_0.txt").write_text("\n".join(lines) + "\n")
    r, msgs = quiet(mlperf.load_results, d)
    run = r.runs.row(0, named=True)
    case(abs(run["eval_value"] - 2.66) < 1e-9 and run["status"] == "damaged"
         and any("eval_conflict" in m and "result_0.txt:" in m for m in msgs),
         f"eval conflict: value {run['eval_value']}, status {run['status']} (expect 2.66, damaged)")  # fmt: skip
    # LoRA phases: 7 blocks and 7 evals on samples_count (was: only init)
    ph, _ = quiet(telemetry.phases_from_log, lora / "result_0.txt")
    kinds = ph["kind"].value_counts().sort("kind").rows()
    case(kinds == [("eval", 7), ("init", 1), ("train", 7)], f"LoRA phases_from_log: {kinds}")
    try:
        r, _ = quiet(mlperf.load_results, lora)
        telemetry.phases_from_log(r)
        case(False, "phases_from_log of several files without file=: no error")
    except InputError as e:
        case("result_" in str(e), f"phases_from_log of several files: {str(e)[:90]!r}")
    # .gz next to a plain file, and a folder of only .gz
    d = tmp / "gz"
    d.mkdir()
    (d / "result_0.txt").write_bytes((lora / "result_0.txt").read_bytes())
    (d / "result_1.txt.gz").write_bytes(gzip.compress((lora / "result_1.txt").read_bytes()))
    r, _ = quiet(mlperf.load_results, d)
    d2 = tmp / "gzonly"
    d2.mkdir()
    (d2 / "result_1.txt.gz").write_bytes((d / "result_1.txt.gz").read_bytes())
    r2, _ = quiet(mlperf.load_results, d2)
    case(r.runs.height == 2 and r2.runs.height == 1,
         f".gz: {r.runs.height} runs beside a plain file (expect 2), {r2.runs.height} alone (expect 1)")  # fmt: skip
    # a lone surrogate in one file costs only that file
    d = tmp / "sur"
    d.mkdir()
    (d / "result_0.txt").write_bytes((lora / "result_0.txt").read_bytes())
    text = (lora / "result_1.txt").read_text().replace('"key": "eval_accuracy"',
                                                     '"key": "eval_accuracy\\ud800"', 1)  # fmt: skip
    (d / "result_1.txt").write_text(text)
    r, _ = quiet(mlperf.load_results, d)
    st = sorted(r.runs["status"].to_list())
    case(st == ["parse_error", "success"], f"lone surrogate: statuses {st}")
    # a huge step time (an integer no float holds) in one log: no OverflowError
    big = "1" + "0" * 400
    ev = pl.DataFrame({
        "file": ["a", "a"], "key": ["tracked_stats"] * 2, "time_ms": [1.0, 2.0],
        "value": ['{"train_step_timing in s": ' + big + "}", '{"train_step_timing in s": 2.5}'],
        "metadata": ['{"step": 1}', '{"step": 2}'],
    })  # fmt: skip
    try:
        st, _ = quiet(mlperf.step_times, ev)
        rows = st.select("step", "step_time_s").rows()
        case(rows == [(2, 2.5)], f"huge step time: step_times {rows} (expect [(2, 2.5)])")
    except Exception as e:  # noqa: BLE001
        case(False, f"huge step time: {type(e).__name__}: {e}")
    f = pl.DataFrame({"hostname": ["n1"], "job_id": ["42"], "timestamp": [0]})
    try:
        telemetry.select_job(f, job_id="7", source="dcgm/job.prom")
        case(False, "select_job of an unknown job: no error")
    except InputError as e:
        case(str(e).startswith("dcgm/job.prom:"), f"select_job unknown job: {str(e)[:80]!r}")


def slurm_cases(tmp: Path) -> None:
    syn = ROOT / "tests" / "data" / "slurm" / "synthetic"
    text = (syn / "json_23_11.json").read_text()
    bad = tmp / "a.json"
    bad.write_text(text.replace('"pretrain"', '"pre\\ud800train"', 1))
    good = tmp / "b.json"
    good.write_text((syn / "json_job_resources.json").read_text())
    d, msgs = quiet(slurm.read_sacct_dumps, [bad, good])
    case(d.jobs.height == 3 + 5 and any("a.json:" in m for m in msgs),
         f"sacct JSON lone surrogate: {d.jobs.height} jobs of 2 dumps (expect 3 + 5)")  # fmt: skip
    doc = json.loads(text)
    doc["jobs"][2]["time"]["elapsed"] = {"set": True, "infinite": False, "number": 1.5}
    p = tmp / "onebad.json"
    p.write_text(json.dumps(doc))
    try:
        r, msgs = quiet(slurm.read_sacct, p)
        ids = r.jobs["JobID"].to_list()
        case(ids == ["200", "201"] and any("onebad.json" in m for m in msgs),
             f"sacct JSON one bad record: jobs {ids} kept (expect 200, 201), warned")  # fmt: skip
    except InputError as e:
        case(False, f"sacct JSON one bad record: whole file refused ({e})")


def cli(*args: str, cwd: Path) -> tuple[int, str, float, int]:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "trainperf", *args], cwd=cwd, capture_output=True,
                       text=True)  # fmt: skip
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return p.returncode, (p.stderr + p.stdout).strip(), time.perf_counter() - t0, rss


def config_and_out_cases(tmp: Path) -> None:
    bomb = "".join(["a: &a [{}]\n".format(",".join(["lol"] * 9))]
                   + [f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
                      for p, c in zip("abcdefgh", "bcdefghi", strict=True)])  # fmt: skip
    cfgp = tmp / "bomb.yaml"
    cfgp.write_text(bomb)
    _, _, dt0, _ = cli("report", "--out", "/", cwd=ROOT)  # start-up and a refusal: the baseline
    rc, err, dt, rss = cli("report", "--config", str(cfgp), "--out", str(tmp / "bo"), cwd=ROOT)
    lines = err.splitlines()
    case(rc != 0 and len(lines) == 1 and "bomb.yaml" in err,
         f"billion laughs ({len(bomb)} B) via `trainperf report`: rc {rc} in {dt:.2f} s against "
         f"{dt0:.2f} s for a refused --out / (the process start-up), peak RSS of the children "
         f"{rss / 1024:.0f} MiB; one line: {err[:90]!r}")  # fmt: skip
    t0 = time.perf_counter()
    try:
        yamlfile.load_yaml_file(cfgp)
        refused = False
    except (ConfigError, InputError):
        refused = True
    case(
        refused and time.perf_counter() - t0 < 1.0,
        f"billion laughs refused by the loader in {time.perf_counter() - t0:.4f} s (< 1 s)",
    )
    for out in ("/", str(Path.home()), str(ROOT), ".."):
        rc, err, _, _ = cli("report", "--out", out, cwd=ROOT)
        case(rc == 1 and len(err.splitlines()) == 1 and "--out" in err,
             f"--out {out}: refused, {err[:90]!r}")  # fmt: skip
    user = tmp / "mine"
    user.mkdir()
    (user / "thesis.tex").write_text("mine")
    rc, err, _, _ = cli("report", "--out", str(user), cwd=ROOT)
    case(rc == 1 and (user / "thesis.tex").read_text() == "mine" and len(list(user.iterdir())) == 1,
         f"--out a user's non-empty folder: refused, untouched ({err[:70]!r})")  # fmt: skip


def injection_cases(tmp: Path) -> None:
    hostile = ('<script>alert(1)</script> [x](javascript:alert(1)) **b** @sec-x '
               '{{< include /etc/passwd >}}')  # fmt: skip
    lines = (ROOT / "configs" / "sakuraone.yaml").read_text().splitlines()
    for key, val in (("name", "Evil <script>alert(2)</script> **n**"), ("description", hostile)):
        k = [i for i, ln in enumerate(lines) if ln.startswith(f"{key}:")]
        row = f"{key}: {json.dumps(val)}"
        if k:
            lines[k[0]] = row
        else:
            lines.insert(0, row)
    (tmp / "configs").mkdir()
    (tmp / "data").symlink_to(ROOT / "data")  # the demo config's ../data/... paths
    cfg = tmp / "configs" / "evil.yaml"
    cfg.write_text("\n".join(lines) + "\n")
    out = tmp / "inj"
    try:
        quiet(report.run_report, out=out, config=cfg, notebooks=[], run_batches=False,
              use_quarto=False, progress=False, log=lambda *_: None)  # fmt: skip
    except (ConfigError, InputError) as e:
        case(True, f"hostile description refused: {e}")
        return
    pages = "".join(p.read_text(errors="replace") for p in (out / "site").rglob("*.html"))
    bad = [s for s in ("<script>alert", 'href="javascript:', "<strong>b</strong>",
                       "<strong>n</strong>", "root:x:0")
           if s in pages]  # fmt: skip
    shown = {k: pages.count(f"&lt;script&gt;alert({k})") for k in (1, 2)}
    double = "&amp;lt;script" in pages
    case(not bad and not double,
         f"config name/description in the preview site: live markup {bad or 'none'}, shown as "
         f"text (name, description: times) {shown[2]}, {shown[1]}, double-escaped {double}")  # fmt: skip
    t = table(pl.DataFrame({"JobName": ["<script>x</script> & co"]}), {"JobName": "Job"})
    html = " ".join(pypandoc.convert_text(t.markdown, "html", format="markdown").split())
    case("&lt;script&gt;x&lt;/" in html and "&amp;lt;" not in html and "<script>" not in html
         and "&amp; co" in html,
         f"table of job names: escaped exactly once ({html[html.find('&lt;'):][:40]!r})")  # fmt: skip


def mlperf_memory(tmp: Path, mb: int) -> None:
    """The issue's 1 GB log on ``mb`` MB and ``mb / 2`` MB: the bundled GPT-3 log's lines repeated
    at later times (``benchmarks/mlperf_big.py``, as the benchmark builds it), and, harder, a log of
    only repeated ``run_start``/``eval_accuracy`` lines (every event kept, relaunches). Peak RSS
    (imports included) and what the result holds (the events frame's ``estimated_size``, which
    counts a string buffer shared by many rows once a row: an upper bound), per MB of file."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import mlperf_big  # noqa: PLC0415 - the benchmark's generator, found only at run time

    def repeated_evals(d: Path, size_mb: int) -> Path:
        d.mkdir()
        lines = gpt3_run(minutes=10.0)
        stop = lines.pop()
        body = "\n".join(lines[6:-1]) + "\n"  # run_start and two evals, repeated
        with open(d / "result_0.txt", "w") as f:
            f.write("\n".join(lines[:7]) + "\n")
            for _ in range(size_mb * 1_000_000 // len(body)):
                f.write(body)
            f.write(stop + "\n")
        return d

    code = ("import resource,sys,time,warnings;warnings.simplefilter('ignore');"
            "from trainperf import mlperf\n"
            "t=time.process_time();r=mlperf.load_results(sys.argv[1]);"
            "print(time.process_time()-t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1024,"
            " r.events.estimated_size()/2**20, r.runs.height, r.events.height)")  # fmt: skip
    for kind in ("bundled log repeated", "repeated run_start/evals"):
        got = []
        for size in (max(1, mb // 2), mb):  # both above the parser's 32-MB piece
            d = tmp / f"{kind[:8].strip()}{size}"
            if kind.startswith("bundled"):
                d, _ = mlperf_big.make_log(d, size * 1_000_000)
            else:
                d = repeated_evals(d, size)
            real = sum(p.stat().st_size for p in d.rglob("result_*.txt")) / 1e6
            p = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True,
                               text=True)  # fmt: skip
            for f in d.rglob("result_*.txt"):
                f.unlink()
            if p.returncode != 0:
                case(False, f"MLPerf {kind} {real:.0f} MB: {p.stderr.strip().splitlines()[-1]}")
                break
            cpu, peak, kept, _runs, events = p.stdout.split()
            got.append((real, float(cpu), float(peak), float(kept), int(events)))
        if len(got) < 2:
            continue
        (a_mb, a_s, a_pk, a_kp, _), (b_mb, b_s, b_pk, b_kp, b_ev) = got
        per_mb = (b_pk - a_pk) / (b_mb - a_mb)
        held_per_mb = (b_kp - a_kp) / (b_mb - a_mb)
        at_1gb = b_pk + per_mb * (1000 - b_mb)
        # the rule: memory a small multiple of what the reader keeps, not of the file:
        # the peak grows by at most twice what the result grows by (plus one 32-MB piece)
        ok = b_pk - a_pk <= 2 * (b_kp - a_kp) + 32
        case(ok,
             f"MLPerf {kind}: {a_mb:.0f} MB -> {a_s:.1f} s CPU, peak {a_pk:.0f} MiB, holds "
             f"{a_kp:.0f} MiB; {b_mb:.0f} MB ({b_ev:,} events) -> {b_s:.1f} s CPU, peak "
             f"{b_pk:.0f} MiB, holds {b_kp:.0f} MiB; per MB of file the peak grows "
             f"{per_mb:.2f} MiB, what it holds {held_per_mb:.2f} MiB; extrapolated to 1 GB: peak "
             f"{at_1gb:.0f} MiB, {b_s * 1000 / b_mb:.0f} s CPU (issue: 3.6 GB, 48 s)")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100, help="MLPerf log size in MB (default 100)")
    ap.add_argument("--skip", nargs="*", default=[], help="groups to skip")
    a = ap.parse_args()
    groups = {"dcgm": dcgm_cases, "mlperf": mlperf_cases, "slurm": slurm_cases,
              "config": config_and_out_cases, "injection": injection_cases,
              "memory": lambda t: mlperf_memory(t, a.mb)}  # fmt: skip
    with tempfile.TemporaryDirectory() as t:
        for name, fn in groups.items():
            if name in a.skip:
                continue
            d = Path(t) / name
            d.mkdir()
            try:
                fn(d)
            except Exception as e:  # noqa: BLE001 - a crash of a case is a failed case
                case(False, f"{name}: {type(e).__name__}: {e}")
    bad = sum(1 for ok, _ in RESULTS if not ok)
    print(f"{len(RESULTS)} cases, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    sys.exit(main())
