"""Fuzz the MLPerf log reader with inputs mutated from the bundled Eos logs (issue 15).

Usage::

    .venv/bin/python tests/fuzz/fuzz_mlperf.py                 # 20,000 inputs, seed 0
    .venv/bin/python tests/fuzz/fuzz_mlperf.py -n 2000 --seed 7

Each input is a compact copy of one bundled ``result_*.txt`` (its distinct events plus a few rank
duplicates, so that one load takes milliseconds) with 1-4 mutations: truncation, byte flips, invalid
UTF-8, huge/NaN/Inf numbers, empty, removed and duplicated fields, JSON nodes of the wrong type,
wrapped or zero timestamps, duplicated and swapped lines, deep nesting; one input in ten also damages
the systems JSON. The file goes through ``load_results`` and every analysis of its result (scores,
throughput, eval curve, blocks, step times, hyperparameters, quality summary); an exception the
loader isolated (an ``internal_error`` row) is counted as uncaught and re-raised without the
isolation (``loader._load_file``) for its traceback.

Printed: inputs, exceptions that are not the product's own (goal 0; by type with an example), the
product's own errors (each must name the file), rows with an internal_error check, warnings that are
not :class:`~trainperf.mlperf.MLPerfLogWarning`, and the statuses seen. Exit status 1 when anything
but the product's own types escaped.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # thousands of tiny frames: threads only cost
ROOT = Path(__file__).resolve().parents[2]
MLPERF = ROOT / "data" / "mlperf"

from trainperf import mlperf  # noqa: E402
from trainperf.errors import InputError  # noqa: E402
from trainperf.mlperf import loader  # noqa: E402

NUMBERS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1",
    "0",
    str(2**32),
    str(2**63),
    "9" * 30,
    "9" * 5000,
    "1.5",
    '"12"',
    '"abc"',
    "null",
    "true",
    "[]",
    "{}",
    '{"a": [1, {"b": null}]}',
    '""',
]
FIELDS = ["time_ms", "key", "value", "metadata", "event_type", "namespace"]


def compact(path: Path) -> list[str]:
    """Distinct events of a log plus up to 3 rank duplicates of each (20 tracked_stats), in file order."""
    seen: collections.Counter = collections.Counter()
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(line.split(":::MLLOG", 1)[1]) if ":::MLLOG" in line else None
        except ValueError:
            ev = None
        sig = (
            (ev.get("key"), json.dumps(ev.get("value")), json.dumps(ev.get("metadata")))
            if ev
            else line
        )
        seen[sig] += 1
        seen[ev.get("key") if ev else None] += 1
        if seen[sig] <= 3 and (
            not ev or ev.get("key") != "tracked_stats" or seen["tracked_stats"] <= 20
        ):
            out.append(line)
    return out


def mutate_line(line: str, rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:  # a number replaced by something else
        field = rng.choice(
            ["time_ms", "value", "epoch_num", "samples_count", "step", "lineno", "status"]
        )
        token = f'"{field}": '
        i = line.find(token)
        if i < 0:
            return line
        j = i + len(token)
        k = j
        depth = 0
        while k < len(line) and (depth or line[k] not in ",}"):
            depth += {"{": 1, "[": 1, "}": -1, "]": -1}.get(line[k], 0)
            k += 1
        return line[:j] + rng.choice(NUMBERS) + line[k:]
    if kind == 1:  # a field removed or emptied
        field = rng.choice(FIELDS)
        if rng.random() < 0.5:
            return line.replace(f'"{field}": ', '"_gone": ', 1)
        return line.replace(f'"{field}": ', f'"{field}": "", "_x": ', 1)
    if kind == 2:  # a field duplicated
        field = rng.choice(FIELDS)
        return line.replace(f'"{field}": ', f'"{field}": {rng.choice(NUMBERS)}, "{field}": ', 1)
    if kind == 3:  # a JSON node of the wrong type
        field = rng.choice(FIELDS)
        return line.replace(f'"{field}": ', f'"{field}": {rng.choice(NUMBERS)}, "_was": ', 1)
    if kind == 4:  # a timestamp wrapped, zeroed or scaled
        token = '"time_ms": '
        i = line.find(token)
        if i < 0:
            return line
        j = i + len(token)
        k = j
        while k < len(line) and line[k].isdigit():
            k += 1
        if k == j or k - j > 19:  # no digits, or an earlier mutation's 5000-digit number
            return line
        t = int(line[j:k])
        new = rng.choice([t + 2**32, t - 2**32, t % 2**32, 0, t * 1000, t // 1000, t + 3_600_001])
        return line[:j] + str(new) + line[k:]
    if kind == 5:  # deep nesting
        return line.replace(
            '"value": ', '"value": ' + "[" * 5000 + "1" + "]" * 5000 + ', "_v": ', 1
        )
    if kind == 6:  # a rank prefix, carriage returns, two events on one line
        return rng.choice(["0: ", "[1,0]<stdout>:", "x\r"]) + line + rng.choice(["", "\r", line])
    return line[: rng.randrange(len(line) + 1)]  # cut off


def mutate(lines: list[str], rng: random.Random) -> bytes:
    lines = list(lines)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if not lines:
            break
        i = rng.randrange(len(lines))
        if op <= 2:
            lines[i] = mutate_line(lines[i], rng)
        elif op == 3:  # duplicated lines (ranks)
            lines[i:i] = [lines[i]] * rng.randint(1, 8)
        elif op == 4:  # swapped lines
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 5:  # dropped lines
            del lines[i : i + rng.randint(1, 50)]
        else:
            lines.insert(i, rng.choice(["", ":::MLLOG", ":::MLLOG {", ":::SYSJSON [", "+ srun x"]))
    data = ("\n".join(lines) + "\n").encode("utf-8")
    r = rng.random()
    if r < 0.15:  # truncation
        data = data[: rng.randrange(len(data) + 1)]
    elif r < 0.30:  # byte flips
        b = bytearray(data)
        for _ in range(rng.randint(1, 20)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
    elif r < 0.40:  # invalid UTF-8
        k = rng.randrange(len(data) + 1)
        data = data[:k] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + data[k:]
    return data


def run(n: int, seed: int, verbose: bool = False, reference: bool = False) -> dict:
    """Fuzz ``n`` inputs; ``reference``: the pre-issue-15 loader (tests/mlperf_reference.py) instead."""
    rng = random.Random(seed)
    impl = mlperf
    if reference:
        sys.path.insert(0, str(ROOT / "tests"))
        import mlperf_reference as impl  # noqa: PLC0415  only with --reference, from tests/
    sources = []
    for f in mlperf.find_result_files(MLPERF):
        rel = f.relative_to(MLPERF)
        systems = MLPERF / rel.parts[0] / rel.parts[1] / "systems" / f"{rel.parts[3]}.json"
        sources.append((rel, compact(f), systems.read_bytes() if systems.is_file() else None))
    uncaught: collections.Counter = collections.Counter()
    examples: dict = {}
    own = unnamed = internal = foreign_warnings = 0
    statuses: collections.Counter = collections.Counter()
    tmp = Path(tempfile.mkdtemp(prefix="fuzz_mlperf_"))
    t0 = time.perf_counter()
    try:
        for i in range(n):
            rel, lines, sysjson = sources[rng.randrange(len(sources))]
            root = tmp / f"in{i % 50}"
            if root.exists():
                shutil.rmtree(root)
            path = root / rel
            path.parent.mkdir(parents=True)
            path.write_bytes(mutate(lines, rng))
            if sysjson is not None:
                js = root / rel.parts[0] / rel.parts[1] / "systems" / f"{rel.parts[3]}.json"
                js.parent.mkdir(parents=True)
                js.write_bytes(
                    mutate(sysjson.decode().splitlines(), rng) if rng.random() < 0.1 else sysjson
                )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    res = impl.load_results(root)
                    statuses.update(res.runs["status"].to_list())
                    quality = getattr(res, "quality", None)
                    bugs = (
                        quality.filter(quality["check"] == "internal_error")
                        if quality is not None
                        else []
                    )
                    if len(bugs):  # the loader isolated an exception: get its traceback
                        internal += len(bugs)
                        try:
                            loader._load_file(path, {})
                        except Exception as exc:  # noqa: BLE001
                            name = f"isolated {type(exc).__name__}"
                            uncaught[name] += 1
                            examples.setdefault(
                                name, (str(path), "".join(traceback.format_exception(exc)[-3:]))
                            )
                    impl.throughput(res)
                    impl.eval_curve(res)
                    impl.blocks(res.events)
                    impl.step_times(res.events)
                    if not reference:
                        mlperf.hyperparameters(res)
                        mlperf.quality_summary(res)
                except (InputError, OSError) as exc:
                    own += 1
                    if str(path) not in str(exc) and getattr(exc, "source", None) != str(path):
                        unnamed += 1
                except Exception as exc:  # noqa: BLE001 - what the fuzzer is for
                    name = type(exc).__name__
                    uncaught[name] += 1
                    if name not in examples:
                        examples[name] = (str(path), "".join(traceback.format_exception(exc)[-3:]))
                        if verbose:
                            print(examples[name][1], file=sys.stderr)
            foreign_warnings += sum(
                1
                for w in caught
                if not issubclass(w.category, (mlperf.MLPerfLogWarning, impl.MLPerfLogWarning))
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "inputs": n,
        "seed": seed,
        "seconds": round(time.perf_counter() - t0, 1),
        "uncaught": dict(uncaught),
        "uncaught_total": sum(uncaught.values()),
        "examples": examples,
        "own_errors": own,
        "own_errors_not_naming_the_file": unnamed,
        "internal_error_rows": internal,
        "foreign_warnings": foreign_warnings,
        "statuses": dict(statuses),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000, help="number of inputs (default 20,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "-v", "--verbose", action="store_true", help="print the first traceback of each type"
    )
    ap.add_argument(
        "--reference",
        action="store_true",
        help="fuzz the pre-issue-15 loader (for the before count)",
    )
    args = ap.parse_args(argv)
    out = run(args.n, args.seed, args.verbose, args.reference)
    print(json.dumps(out, indent=2))
    bad = out["uncaught_total"] + out["internal_error_rows"] + out["own_errors_not_naming_the_file"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
