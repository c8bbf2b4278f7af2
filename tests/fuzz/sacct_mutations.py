"""Mutations of sacct dumps for the fuzz scripts ``fuzz_sacct_parsable.py`` and ``fuzz_sacct_json.py``.

Every mutation takes the input bytes and a seeded :class:`random.Random`; the kinds are those of
issue 15: truncations, byte flips, invalid UTF-8, huge/NaN/Inf numbers, empty and duplicated
fields and lines, and (JSON) nodes of the wrong type.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SLURM = ROOT / "tests" / "data" / "slurm"

NUMBERS = [
    "NaN",
    "nan",
    "inf",
    "-Infinity",
    "1e400",
    "-1",
    "0",
    "4294967294",
    "4294967295",
    str(2**32),
    str(2**63),
    str(-(2**63) - 1),
    "9" * 30,
    "1.5",
    "٣",
    "",
    " ",
    "-0",
    "+5",
]
WORDS = [
    "Unknown",
    "None",
    "None assigned",
    "INVALID",
    "UNLIMITED",
    "Partition_Limit",
    "CANCELLED by 0",
    "CANCELLED+",
    "gpu[001-004,007]",
    "gpu[004-001]",
    "gpu[1-99999999]",
    "a[1]b[2]" * 40,
    "gres/gpu=8,gres/gpu:h100=8",
    "gres/gpu=x",
    "cpu=,mem",
    "=",
    "2024-02-30T00:00:00",
    "2024-06-01T23:59:60",
    "2024-6-1T1:2:3",
    "2024-11-03T01:30:00",
    "1-02",
    "99:99",
    "00:00:60",
    "12:75",
    "123_[5-10]",
    "1853+0.0",
    "7.extern",
    "1.2.3",
    "_",
    "\x00",
    "\t",
    "\u00a0x\u00a0",
    " 5 ",
]
BAD_BYTES = [b"\xff", b"\xe9", b"\x82\xa0", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"]


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)] if data else data


def flip_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(BAD_BYTES) + data[i:]


def duplicate_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if not lines:
        return data
    i = rng.randrange(len(lines))
    lines[i:i] = [lines[i]] * rng.randint(1, 3)
    return b"\n".join(lines)


def swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if len(lines) > 1:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def delete_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    if lines:
        del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n", b"\r\r\n"]))


GENERIC: list[Callable[[bytes, random.Random], bytes]] = [
    truncate,
    flip_bytes,
    invalid_utf8,
    duplicate_lines,
    swap_lines,
    delete_lines,
    crlf,
]


def mutate(data: bytes, rng: random.Random, specific: list) -> bytes:
    """1 to 4 mutations, each generic (bytes) or specific to the format."""
    for _ in range(rng.randint(1, 4)):
        fn = rng.choice(specific + GENERIC if rng.random() < 0.7 else GENERIC)
        data = fn(data, rng)
    return data


def json_value(rng: random.Random):
    """A JSON value of some type, for nodes of the wrong type."""
    return rng.choice(
        [
            None,
            True,
            0,
            -1,
            2**64,
            1.5,
            float("inf"),
            float("nan"),
            "",
            "x",
            "COMPLETED",
            [],
            [1, "a"],
            {},
            {"number": 1, "set": True},
            {"number": None, "set": True, "infinite": False},
            {"infinite": True, "number": 0},
            [{"type": "gres", "name": "gpu", "count": "8"}],
        ]
    )


def load_json_docs() -> list[dict]:
    out = []
    for p in sorted((SLURM / "synthetic").glob("json_2*.json")) + [
        SLURM / "real" / "sacct.json",
        SLURM / "real" / "damage" / "sacct.json",
    ]:
        text = p.read_text(encoding="utf-8")
        out.append(json.loads(text[text.find("{") :]))
    return out
