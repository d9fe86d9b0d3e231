"""Is a screenshot blank? A small PNG reader (zlib + struct, no imaging library): the colours of its
pixels, decoded row by row (non-interlaced, 8 bits per channel: what Chromium writes)."""
from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type → bytes per pixel at 8 bits


@dataclass(frozen=True)
class Colours:
    width: int
    height: int  # the rows read
    distinct: int
    dominant_share: float  # the most common colour's share of the pixels


def _chunks(data: bytes):
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file")
    at = len(SIGNATURE)
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        yield kind, data[at + 8:at + 8 + length]
        at += 12 + length


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, prev: bytearray, bpp: int) -> None:
    n = len(row)
    if kind == 1:
        for i in range(bpp, n):
            row[i] = (row[i] + row[i - bpp]) & 255
    elif kind == 2:
        row[:] = bytes((x + y) & 255 for x, y in zip(row, prev))
    elif kind == 3:
        for i in range(n):
            row[i] = (row[i] + ((row[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
    elif kind == 4:
        for i in range(n):
            a = row[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + _paeth(a, prev[i], c)) & 255
    elif kind != 0:
        raise ValueError(f"unknown PNG filter {kind}")


def colours(data: bytes, max_rows: int | None = None) -> Colours:
    """The distinct colours of the first `max_rows` rows (all without it) of a PNG image."""
    header, idat = None, bytearray()
    for kind, body in _chunks(data):
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or interlace or colour_type not in CHANNELS:
        raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour_type}, interlace {interlace})")
    bpp = CHANNELS[colour_type]
    stride = width * bpp
    rows = height if max_rows is None else min(height, max_rows)
    raw = zlib.decompressobj().decompress(bytes(idat), rows * (stride + 1))
    counts: Counter = Counter()
    prev = bytearray(stride)
    for y in range(rows):
        start = y * (stride + 1)
        row = bytearray(raw[start + 1:start + 1 + stride])
        _unfilter(raw[start], row, prev, bpp)
        counts.update(bytes(row[x:x + bpp]) for x in range(0, stride, bpp))
        prev = row
    total = sum(counts.values()) or 1
    return Colours(width, rows, len(counts), max(counts.values(), default=0) / total)
