"""Seeded mutations of reader inputs for the fuzz scripts (run by hand, not by pytest).

Each mutation mimics damage real telemetry carries: a file cut off, flipped bytes, invalid UTF-8,
numbers that are huge / NaN / Inf, emptied or duplicated fields and lines, and (for JSON) nodes of
the wrong type.
"""

from __future__ import annotations

import json
import random
import re
import traceback
import warnings
from collections import Counter
from collections.abc import Callable

from trainperf.errors import TrainperfError

NUMBERS = [b"NaN", b"nan", b"+Inf", b"-Inf", b"inf", b"1e400", b"-1e400", b"99999999999999999999999",
           b"9223372036854775807", b"-9223372036854775809", b"0x10", b"1_000", b"", b"-0", b"1e-400",
           b"18446744073709551616", b"3.4e38", b".", b"-", b"1.2.3"]  # fmt: skip
JUNK = [b"\xff\xfe", b"\xc3", b"\x00", b"\x1f", b"}", b"{", b'"', b"\\", b",", b"=", b"\n", b"\r\n",
        b"\t", b" ", b"#", b"# SCRAPE x", b"# SCRAPE 99999999999", b"GPU", b"N/A", b"\xe2\x82"]  # fmt: skip
_NUM_RE = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _lines(b: bytes) -> list[bytes]:
    return b.split(b"\n")


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """One to three random text-level mutations of ``data``."""
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(9)
        if op == 0 and data:  # truncate
            data = data[: rng.randrange(len(data))]
        elif op == 1 and data:  # flip bytes
            b = bytearray(data)
            for _ in range(rng.randint(1, 4)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            data = bytes(b)
        elif op == 2:  # insert junk / invalid UTF-8
            i = rng.randrange(len(data) + 1)
            data = data[:i] + rng.choice(JUNK) + data[i:]
        elif op == 3:  # replace a number by a nasty one
            nums = list(_NUM_RE.finditer(data))
            if nums:
                m = rng.choice(nums)
                data = data[: m.start()] + rng.choice(NUMBERS) + data[m.end() :]
        elif op == 4:  # duplicate a line
            ls = _lines(data)
            i = rng.randrange(len(ls))
            ls.insert(i, ls[i])
            data = b"\n".join(ls)
        elif op == 5:  # delete a line
            ls = _lines(data)
            if len(ls) > 1:
                del ls[rng.randrange(len(ls))]
            data = b"\n".join(ls)
        elif op == 6:  # empty a field between delimiters
            seps = [m.start() for m in re.finditer(rb'[,\s="{}]', data)]
            if len(seps) > 1:
                i = rng.randrange(len(seps) - 1)
                data = data[: seps[i] + 1] + data[seps[i + 1] :]
        elif op == 7:  # duplicate a field
            seps = [m.start() for m in re.finditer(rb"[,\s]", data)]
            if len(seps) > 1:
                i = rng.randrange(len(seps) - 1)
                data = data[: seps[i + 1]] + data[seps[i] : seps[i + 1]] + data[seps[i + 1] :]
        elif op == 8:  # swap two lines
            ls = _lines(data)
            if len(ls) > 1:
                i, j = rng.randrange(len(ls)), rng.randrange(len(ls))
                ls[i], ls[j] = ls[j], ls[i]
            data = b"\n".join(ls)
    return data


WRONG = [
    None,
    True,
    0,
    -1,
    1e308,
    float("nan"),
    "",
    "x",
    "NaN",
    [],
    {},
    [1, 2, 3],
    {"a": 1},
    [[]],
    "1e400",
]


def _nodes(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, (*path, i))


def _set(obj, path, value):
    if not path:
        return value
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


def mutate_json(data: bytes, rng: random.Random) -> bytes:
    """Replace a node of the JSON document by a value of a wrong type (or fall back to bytes)."""
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    obj = json.loads(data)
    for _ in range(rng.randint(1, 2)):
        nodes = list(_nodes(obj))
        path, _ = rng.choice(nodes)
        obj = _set(obj, path, json.loads(json.dumps(rng.choice(WRONG))))
    return json.dumps(obj).encode()


def run(name: str, seeds: list[bytes], read: Callable[[bytes], object], n: int, seed: int,
        mutate: Callable[[bytes, random.Random], bytes] = mutate_bytes) -> int:  # fmt: skip
    """Feed ``n`` mutated inputs to ``read``; print and return the count of non-product exceptions."""
    rng = random.Random(seed)
    ok = product = 0
    other: Counter = Counter()
    examples: dict = {}
    warnings.simplefilter("ignore")
    for i in range(n):
        data = mutate(rng.choice(seeds), rng)
        try:
            read(data)
            ok += 1
        except TrainperfError as e:
            product += 1
            if getattr(e, "source", None) is None:
                other["product error without a source"] += 1
        except Exception as e:  # noqa: BLE001 - counting exactly these is the point
            key = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
            other[key] += 1
            examples.setdefault(key, (i, data[:300], traceback.format_exc(limit=3)))
    bad = sum(other.values())
    print(f"{name}: {n} inputs (seed {seed}): {ok} read, {product} product errors "
          f"(DcgmFormatError/InputError), {bad} other exceptions")  # fmt: skip
    for k, c in other.most_common(10):
        print(f"  {c:6d}  {k}")
        print("         " + examples[k][2].strip().splitlines()[-1] if k in examples else "")
    return bad
