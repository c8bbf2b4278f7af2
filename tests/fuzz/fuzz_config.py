"""Fuzz the cluster-config loader with configs mutated from the bundled ones (issue 26).

Usage::

    nice -n 10 .venv/bin/python tests/fuzz/fuzz_config.py                # 20,000 inputs, seed 0
    nice -n 10 .venv/bin/python tests/fuzz/fuzz_config.py -n 2000 --seed 7

Each input is one of ``configs/*.yaml`` with 1-4 mutations: of the YAML tree (a value replaced by
one of another type, null, huge/NaN numbers, hostile strings such as ``<script>``, shortcodes and
lone surrogates, lists, mappings; a key deleted, renamed or duplicated; alias bombs, recursive
aliases, deep nesting) or of the bytes (truncation, byte flips, invalid UTF-8, duplicated and
deleted lines, tabs). The file goes through :func:`trainperf.config.load_config` and, when it
loads, :func:`trainperf.config.config_values` (the strings the book shows) and
:func:`trainperf.config.report_overrides`.

Printed: inputs, exceptions that are not the product's own (goal 0; by type with an example), the
product's own errors (each must name the file), the slowest input (goal: under a second) and the
values that would carry markup into a page (goal 0: ``{{``, a raw ``<`` or an unescaped ``*``).
Exit status 1 when anything but the product's own types escaped, an error did not name the file,
or a value was unsafe.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

import mutate as M  # noqa: E402

from trainperf.config import config_values, load_config, report_overrides  # noqa: E402
from trainperf.errors import TrainperfError  # noqa: E402

HOSTILE = [
    "<script>alert(1)</script>",
    "{{< include /etc/passwd >}}",
    "**bold** @sec-x [l](javascript:x)",
    "\\ud800",
    "a\nb: c",
    "'",
    '"',
    "&",
    "*alias",
    "&anchor",
    "!!python/object:os.system",
    "x" * 5000,
]
BOMB = "bomb: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"b{i}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
    for i, (p, c) in enumerate(zip("abcdefgh", "bcdefghi", strict=True))
)


def scalar(rng: random.Random) -> str:
    return rng.choice(
        [
            "null", "~", "true", "no", "0", "-1", "1e400", ".nan", ".inf", "2**63", "[]", "{}",
            "[1, [2, [3]]]", "{a: 1}", "''", repr(rng.choice(HOSTILE)), rng.choice(HOSTILE),
            "'" + rng.choice(HOSTILE).replace("'", "''") + "'", "*nope", "&a x", "!!binary aGk=",
            "[" * rng.randint(1, 200), "2026-01-01", "0x10", "1_000",
        ]
    )  # fmt: skip


def text_mutation(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    what = rng.randrange(8)
    if what <= 2 and lines:  # a value replaced
        i = rng.randrange(len(lines))
        if ":" in lines[i]:
            k, _, _ = lines[i].partition(":")
            lines[i] = f"{k}: {scalar(rng)}"
    elif what == 3 and lines:  # a line deleted
        del lines[rng.randrange(len(lines))]
    elif what == 4 and lines:  # a line duplicated (a key twice)
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif what == 5:  # an alias bomb, a recursive alias or deep nesting appended
        lines.append(rng.choice([BOMB, "r: &r [*r]", "d: " + "[" * 100_000, "e: " + "- " * 50_000]))
    elif what == 6 and lines:  # a key renamed
        i = rng.randrange(len(lines))
        lines[i] = re.sub(r"^(\s*)(\w+):", lambda m: f"{m.group(1)}{m.group(2)}_x:", lines[i])
    elif lines:  # indentation broken
        i = rng.randrange(len(lines))
        lines[i] = rng.choice(["\t", "  ", " "]) + lines[i]
    return "\n".join(lines)


_UNSAFE = re.compile(r"\{\{|\}\}|(?<!\\)[<>*_`\[\]@$]")


def unsafe_values(values: dict) -> list[str]:
    bad = []
    for k, v in values["config"].items():
        if not isinstance(v, str):
            continue
        probe = v if k != "file" else re.sub(r"^`+ | `+$", "", v)
        if k == "file":
            if "{{" in probe or "}}" in probe:
                bad.append(f"{k}={v!r}")
        elif _UNSAFE.search(probe):
            bad.append(f"{k}={v!r}")
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000, help="number of inputs (default 20000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    sources = sorted((ROOT / "configs").glob("*.yaml"))
    texts = [p.read_text(encoding="utf-8") for p in sources]
    uncaught: dict[str, list] = collections.defaultdict(list)
    product: collections.Counter = collections.Counter()
    unnamed: list[str] = []
    unsafe: list[str] = []
    loaded = 0
    slowest = (0.0, -1)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        # the configs' relative paths (../data/...) resolve as beside the bundled ones
        (Path(tmp) / "configs").mkdir()
        os.symlink(ROOT / "data", Path(tmp) / "data")
        path = Path(tmp) / "configs" / "fuzz.yaml"
        for i in range(args.n):
            k = rng.randrange(len(texts))
            text = texts[k]
            for _ in range(rng.randint(1, 4)):
                text = text_mutation(text, rng)
            data = text.encode("utf-8", "surrogatepass")
            if rng.random() < 1 / 4:
                data = M.mutate_bytes(data, rng)
            path.write_bytes(data)
            t1 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    cfg = load_config(path)
                    values = config_values(cfg)
                    report_overrides(cfg)
                loaded += 1
                unsafe += [f"#{i}: {u}" for u in unsafe_values(values)]
            except TrainperfError as exc:
                product[type(exc).__name__] += 1
                if str(path) not in str(exc):
                    unnamed.append(f"config {k} #{i}: {exc}")
            except Exception as exc:  # noqa: BLE001 (what the fuzz counts)
                key = f"{type(exc).__name__} (config {sources[k].name})"
                detail = (i, str(exc)[:300], traceback.format_exc()[-1500:])
                uncaught[key].append(detail if len(uncaught[key]) < 2 else (i, None, None))
            dt = time.perf_counter() - t1
            if dt > slowest[0]:
                slowest = (dt, i)
            if (i + 1) % 5000 == 0:
                print(f"... {i + 1} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        shutil.rmtree(Path(tmp) / "configs", ignore_errors=True)
    n_uncaught = sum(len(v) for v in uncaught.values())
    print(f"config fuzz: {args.n} inputs (seed {args.seed}), {loaded} loaded")
    print(f"exceptions that are not the product's own: {n_uncaught}")
    for key, items in sorted(uncaught.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):6d}  {key}")
        for j, msg, tb in items[:1]:
            print(f"          input #{j}: {msg}\n{tb}")
    print(f"product errors (ConfigError etc.): {sum(product.values())} {dict(product)}")
    print(f"product errors not naming the file: {len(unnamed)}")
    for u in unnamed[:5]:
        print(f"  {u}")
    print(f"values that would carry markup into a page: {len(unsafe)}")
    for u in unsafe[:5]:
        print(f"  {u}")
    print(f"slowest input: #{slowest[1]}, {slowest[0]:.3f} s")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 1 if n_uncaught or unnamed or unsafe else 0


if __name__ == "__main__":
    sys.exit(main())
