"""What :class:`~trainperf.promsource.PrometheusSource` refuses to trust from a server: responses
larger than a bound (compressed or inflated), and range results with far more points than the step
asked for.

* A gzip body is inflated in bounded pieces (:func:`gunzip_bounded`): a 1 MB body that inflates to
  1 GiB (a "zip bomb", or a server answering a query far wider than meant) is refused once the
  inflated text passes ``max_response_bytes``, never inflated whole. The body itself is read up to
  the same bound (:func:`read_bounded`).
* A server that ignores ``step`` (a proxy that drops the parameter, a Thanos/Cortex front end that
  returns raw samples) sends every raw sample: 2,000,000 points where 21 were asked.
  :func:`thin_to_step` keeps one point per asked step of each series (the first), so a result holds
  at most the points asked for, and says how many it left out; the caller flags it
  (check ``step_ignored``).
"""

from __future__ import annotations

import zlib
from typing import Any

__all__ = [
    "MAX_RESPONSE_BYTES",
    "ResponseTooLarge",
    "gunzip_bounded",
    "read_bounded",
    "thin_to_step",
]

MAX_RESPONSE_BYTES = 64 * 2**20
"""Largest response body, compressed or inflated (64 MiB): about 2.3 million points of
``[t, "v"]`` JSON (25-30 bytes each), twice what one chunk of the default
``max_points_per_request`` (1,000,000 points) sends; decoded by Python's ``json``, about 5x that
in memory."""


class ResponseTooLarge(Exception):
    """A response body beyond the bound (``what``: ``body`` or ``inflated body``)."""

    def __init__(self, what: str, limit: int):
        self.what, self.limit = what, limit
        super().__init__(f"{what} larger than {limit:,} bytes")


def read_bounded(resp: Any, limit: int) -> bytes:
    """``resp.read()`` of at most ``limit`` bytes.

    Raises:
        ResponseTooLarge: the body is longer.
    """
    raw = resp.read(limit + 1)
    if len(raw) > limit:
        raise ResponseTooLarge("body", limit)
    return raw


def gunzip_bounded(raw: bytes, limit: int) -> bytes:
    """The gzip body ``raw`` inflated, at most ``limit`` bytes (64 KiB of input at a time).

    Raises:
        ResponseTooLarge: the inflated body would be longer.
        zlib.error: not a gzip stream.
    """
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = bytearray()
    view = memoryview(raw)
    for i in range(0, len(raw), 1 << 16):
        out += d.decompress(view[i : i + (1 << 16)], limit + 1 - len(out))
        if len(out) > limit or d.unconsumed_tail:
            raise ResponseTooLarge("inflated body", limit)
        if d.eof:
            break
    out += d.flush()
    if len(out) > limit:
        raise ResponseTooLarge("inflated body", limit)
    return bytes(out)


def thin_to_step(env: dict, start_ms: int, end_ms: int, step_ms: int) -> tuple[dict, int, int]:
    """Keep at most one point per asked step of each series of a ``query_range`` envelope.

    The grid is ``start_ms + k * step_ms`` for ``k = 0 .. (end_ms - start_ms) // step_ms``: a point
    belongs to the step whose grid time is the last at or before it; the first point of each step
    is kept, and points outside [start, end] are dropped. An envelope whose series all have at most
    the asked number of points is returned unchanged.

    Returns:
        (envelope, number of series with more points than asked, points left out).
    """
    n_asked = (end_ms - start_ms) // max(1, step_ms) + 1
    data = env.get("data") if isinstance(env, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list):
        return env, 0, 0
    over = [r for r in result if isinstance(r, dict) and len(r.get("values") or ()) > n_asked]
    if not over:
        return env, 0, 0
    dropped = 0
    new_result = []
    for r in result:
        vals = r.get("values") if isinstance(r, dict) else None
        if not isinstance(vals, list) or len(vals) <= n_asked:
            new_result.append(r)
            continue
        seen: set[int] = set()
        kept = []
        for pt in vals:
            try:
                t_ms = round(float(pt[0]) * 1000)
            except (TypeError, ValueError, IndexError, OverflowError):
                kept.append(pt)  # the reader reports it, with its path
                continue
            if not start_ms <= t_ms <= end_ms:
                continue
            k = (t_ms - start_ms) // step_ms
            if k not in seen:
                seen.add(k)
                kept.append(pt)
        dropped += len(vals) - len(kept)
        new_result.append({**r, "values": kept})
    return {**env, "data": {**data, "result": new_result}}, len(over), dropped
