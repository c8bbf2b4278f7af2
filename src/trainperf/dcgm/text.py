"""Prometheus text-format pieces shared by the exposition readers and the Grafana CSV reader: label
sets, series keys, scrape-marker lines (https://prometheus.io/docs/instrumenting/exposition_formats/)."""

from __future__ import annotations

import re

from trainperf.dcgm.fields import DcgmFormatError
from trainperf.dcgm.series import epoch_us

__all__ = ["marker_us", "parse_labels", "split_series_key"]

_LABEL_RE = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)', re.S)
_ESC_RE = re.compile(r'\\([\\n"])')
_NAME_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_EPOCH_LINE_RE = re.compile(r"\d{9,11}(?:\.\d+)?")
_ISO_LINE_RE = re.compile(
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
)
_SCRAPE_RE = re.compile(r"#\s*(?:SCRAPE|TIMESTAMP|scrape_time)\b[:=]?\s*(\S+)\s*$", re.I)
SAMPLE_RE = r"^([A-Za-z_:][A-Za-z0-9_:]*\s*(?:\{.*\})?)\s*?\s(\S+(?:\s+\S+)?)\s*$"

EXPECT_SAMPLE = "a sample 'name{labels} value [timestamp_ms]'"
EXPECT_LINE = "a sample 'name{labels} value [timestamp_ms]', a '#' comment or a scrape-time line"
EXPECT_VALUE = "a numeric value and optional integer timestamp (ms)"
EXPECT_LABELS = 'labels as {name="value",...}'
EXPECT_MARKER = "'# SCRAPE <epoch seconds|ISO 8601>'"


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESC_RE.sub(lambda m: {"\\": "\\", "n": "\n", '"': '"'}[m.group(1)], s)


_LABELS_FULL_RE = re.compile(
    r'(?:\s*[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*,)*'
    r'(?:\s*[A-Za-z_][A-Za-z0-9_]*\s*=\s*"(?:[^"\\]|\\.)*"\s*)?\s*',
    re.S,
)
_PAIR_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"', re.S)


def parse_labels(body: str) -> dict[str, str] | None:
    """Parse the inside of ``{...}`` of a Prometheus sample; None if malformed."""
    if _LABELS_FULL_RE.fullmatch(body):  # well-formed: two regex passes in C, no Python loop
        return {k: _unescape(v) for k, v in _PAIR_RE.findall(body)}
    out: dict[str, str] = {}
    pos, n = 0, len(body)
    while pos < n:
        if body[pos:].strip() == "":
            break
        m = _LABEL_RE.match(body, pos)
        if not m:
            return None
        out[m.group(1)] = _unescape(m.group(2))
        pos = m.end()
    return out


_NOT_SEEN = object()


def split_series_key(key: str, cache: dict | None = None) -> tuple[str, dict[str, str]] | None:
    """``name{labels}`` -> (name, labels), or None if malformed.

    ``cache``: a dict kept by the caller over many keys; a label text is parsed once (the fields of
    one GPU share it), and the dicts returned are then shared: the caller must not change them.
    """
    if "{" in key:
        i = key.index("{")
        name, body = key[:i].strip(), key[i + 1 :]
        if not body.endswith("}"):
            return None
        if cache is None:
            labels = parse_labels(body[:-1])
        else:
            labels = cache.get(body, _NOT_SEEN)
            if labels is _NOT_SEEN:
                labels = cache[body] = parse_labels(body[:-1])
        if labels is None:
            return None
    else:
        name, labels = key.strip(), {}
    if not name and "__name__" in labels:
        labels = dict(labels)  # not the cached one
        name = labels.pop("__name__")
    if not _NAME_RE.fullmatch(name):
        return None
    return name, labels


def marker_us(text: str) -> int | None:
    """A scrape-marker line -> epoch us, or None if the line is not a marker.

    Raises:
        ValueError: a ``# SCRAPE`` comment whose time does not parse.
    """
    t = text.strip()
    m = _SCRAPE_RE.fullmatch(t)
    if m:
        t = m.group(1)
    elif t.startswith("#"):
        return None
    if _EPOCH_LINE_RE.fullmatch(t):
        return int(round(float(t) * 1_000_000))
    if _ISO_LINE_RE.fullmatch(t):
        try:
            return epoch_us(t)
        except DcgmFormatError:
            raise ValueError(t) from None
    if m:
        raise ValueError(t)
    return None
