"""Units and names shared by the FLOP, MFU and memory models (FLOP in a TFLOP, decimal GB and TB)."""

from __future__ import annotations

from typing import Literal

Recompute = Literal["none", "selective", "full"]

TFLOP = 1e12
"""FLOP in one TFLOP."""
GB = 1e9
"""Bytes in one decimal gigabyte."""
TB = 1e12
"""Bytes in one decimal terabyte."""
