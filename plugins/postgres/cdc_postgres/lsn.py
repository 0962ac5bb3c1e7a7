"""Log sequence numbers: 64-bit WAL positions written as `X/Y` (two hex halves)."""

from __future__ import annotations


def parse_lsn(text: str) -> int:
    """`'0/1D77E80'` → 30899840; raises ValueError naming the bad text."""
    try:
        hi, lo = text.strip().split("/")
        return (int(hi, 16) << 32) | int(lo, 16)
    except ValueError:
        raise ValueError(f"{text!r} is not an LSN; expected the form 16/B374D848") from None


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
