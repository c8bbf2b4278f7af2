"""Fuzz the ``sacct --json`` reader with inputs mutated from the bundled fixtures (issue 15).

Usage::

    .venv/bin/python tests/fuzz/fuzz_sacct_json.py                # 20,000 inputs, seed 0
    .venv/bin/python tests/fuzz/fuzz_sacct_json.py -n 2000 --seed 7

Each input is one of the JSON fixtures (``tests/data/slurm/synthetic/json_*.json``: the shapes of
Slurm 21.08 to 25.05; ``tests/data/slurm/real``: the 22.05.8 dump and the NODE_FAIL dump) with 1-4
mutations of the tree (a node replaced by a value of another type: null, bool, huge/NaN/Inf
numbers, strings, lists, objects, ``{set, infinite, number}``; a key deleted or renamed; a job or
step duplicated) and, one input in three, of the bytes (truncation, byte flips, invalid UTF-8,
CR/LF, duplicated and deleted lines). The file goes through :func:`trainperf.slurm.read_sacct_json`
(``bad_lines`` ``"raise"`` and ``"skip"`` in turn) and, one loaded input in ten, through the job
statistics.

Printed as ``fuzz_sacct_parsable.py`` does; exit status 1 when anything but the product's own types
escaped.
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import random
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sacct_mutations as M  # noqa: E402
from fuzz_sacct_parsable import exercise  # noqa: E402

from trainperf import slurm  # noqa: E402
from trainperf.errors import TrainperfError  # noqa: E402


def _nodes(doc) -> list[tuple[object, object]]:
    """(container, key) of every node of the tree."""
    out, stack = [], [doc]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for k, v in items:
            out.append((node, k))
            if isinstance(v, (dict, list)):
                stack.append(v)
    return out


def tree_mutation(doc, rng: random.Random):
    nodes = _nodes(doc)
    if not nodes:
        return doc
    # prefer nodes inside jobs (the records), where the reader works
    parent, key = rng.choice(nodes)
    what = rng.randrange(6)
    if what <= 2:
        parent[key] = M.json_value(rng)
    elif what == 3 and isinstance(parent, dict):
        del parent[key]
    elif what == 4 and isinstance(parent, dict):
        parent[key + "_x" if isinstance(key, str) else key] = parent.pop(key)
    elif isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))
    else:
        parent[key] = M.json_value(rng)
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20_000, help="number of inputs (default 20000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    docs = M.load_json_docs()
    uncaught: dict[str, list] = collections.defaultdict(list)
    product: collections.Counter = collections.Counter()
    unnamed: list[str] = []
    checks: collections.Counter = collections.Counter()
    loaded = 0
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sacct_fuzz.json"
        for i in range(args.n):
            k = rng.randrange(len(docs))
            doc = copy.deepcopy(docs[k])
            for _ in range(rng.randint(1, 4)):
                doc = tree_mutation(doc, rng)
            data = json.dumps(doc, indent=rng.choice([None, 1])).encode()  # NaN/Infinity allowed
            if rng.random() < 1 / 3:
                data = M.mutate(data, rng, [])
            path.write_bytes(data)
            mode = "raise" if i % 2 == 0 else "skip"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    d = slurm.read_sacct_json(path, bad_lines=mode)
                    if i % 10 == 1:  # the statistics on 1 input in 10 (they cost more than a read)
                        exercise(d)
                loaded += 1
                checks.update(d.quality.get_column("check").to_list())
            except TrainperfError as exc:
                product[type(exc).__name__] += 1
                if str(path) not in str(exc):
                    unnamed.append(f"doc {k} #{i}: {exc}")
            except Exception as exc:  # noqa: BLE001 (what the fuzz counts)
                key = f"{type(exc).__name__} (doc {k}, bad_lines={mode})"
                detail = (i, str(exc)[:300], traceback.format_exc()[-1500:])
                uncaught[key].append(detail if len(uncaught[key]) < 2 else (i, None, None))
            if (i + 1) % 5000 == 0:
                print(f"... {i + 1} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    n_uncaught = sum(len(v) for v in uncaught.values())
    print(f"sacct JSON fuzz: {args.n} inputs (seed {args.seed}), {loaded} loaded")
    print(f"exceptions that are not the product's own: {n_uncaught}")
    for key, items in sorted(uncaught.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(items):6d}  {key}")
        for j, msg, tb in items[:1]:
            print(f"          input #{j}: {msg}\n{tb}")
    print(f"product errors (SacctParseError etc.): {sum(product.values())} {dict(product)}")
    print(f"product errors not naming the file: {len(unnamed)}")
    for u in unnamed[:5]:
        print(f"  {u}")
    print(f"data-quality checks that fired: {dict(checks.most_common())}")
    print(f"{time.perf_counter() - t0:.0f} s")
    return 1 if n_uncaught or unnamed else 0


if __name__ == "__main__":
    sys.exit(main())
