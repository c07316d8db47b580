"""Quantities with units as users write them in YAML: rates, times, percentages, sizes.

Parsing returns plain numbers in base units (bit/s, seconds, percent, bytes) and raises
ValueError with a message that is safe to show next to a field path.
"""

from __future__ import annotations

import math
import re

_NUM = r"(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"

RATE_UNITS = {
    "bit": 1, "bps": 1,
    "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kbps": 8e3, "mbps": 8e6, "gbps": 8e9,  # tc's convention: bps = bytes per second
}
TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "msec": 1e-3, "us": 1e-6, "usec": 1e-6, "ns": 1e-9}
SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
              "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def pattern(unit_names) -> str:
    """What `_split` and a parse_* function of these units accept as text, as a JSON Schema pattern
    (ECMAScript: no inline flags, so each letter is a class of its two cases); "" among the units:
    a bare number. For editors: a misspelt unit is marked where it is typed."""
    names = sorted({u for u in unit_names if u}, key=lambda u: (-len(u), u))
    alts = "|".join("".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in u) for u in names)
    unit = f"({alts})" + ("?" if "" in unit_names else "")
    return rf"^\s*([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*{unit}\s*$"


def _split(value: str | int | float, what: str) -> tuple[float, str]:
    if isinstance(value, bool):
        raise ValueError(f"expected a {what}, got {value!r}")
    if isinstance(value, (int, float)):
        num, unit = _finite(value, what), ""
    else:
        m = re.fullmatch(_NUM + r"\s*(?P<unit>[a-zA-Z%]*)", str(value).strip())
        if not m:
            raise ValueError(f"not a {what}: {_short(value)}")
        num, unit = _finite(m["num"], what), m["unit"].lower()
    return num, unit


def _finite(num, what: str) -> float:
    """A float that is a number: YAML's .inf and .nan, 1e400 and a 400-digit integer are not
    (as infinity they would reach the queue arithmetic: OverflowError)."""
    try:
        f = float(num)
    except OverflowError:
        f = math.inf
    if not math.isfinite(f):
        raise ValueError(f"not a finite {what}: {_short(num)}")
    return f


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_rate(value: str | int | float) -> float:
    """'100mbit' -> 1e8 bit/s. A bare number is bit/s."""
    num, unit = _split(value, "rate (e.g. 100mbit, 1gbit)")
    if unit == "":
        return num
    if unit not in RATE_UNITS:
        raise ValueError(f"unknown rate unit {unit!r} in {value!r} (valid: {', '.join(RATE_UNITS)})")
    return num * RATE_UNITS[unit]


def parse_time(value: str | int | float) -> float:
    """'1ms' -> 0.001 s. A bare number is seconds."""
    num, unit = _split(value, "time (e.g. 1ms, 250us)")
    if unit and unit not in TIME_UNITS:
        raise ValueError(f"unknown time unit {unit!r} in {value!r} (valid: {', '.join(TIME_UNITS)})")
    return round(num * TIME_UNITS.get(unit, 1.0), 12)  # no 9.9999e-05 for 100us


def parse_percent(value: str | int | float) -> float:
    """'0.5%' -> 0.5. A bare number is already percent."""
    num, unit = _split(value, "percentage (e.g. 0.5%)")
    if unit not in ("", "%"):
        raise ValueError(f"not a percentage: {value!r} (write e.g. 0.5%)")
    if not 0 <= num <= 100:
        raise ValueError(f"percentage out of range 0-100: {value!r}")
    return num


def parse_size(value: str | int | float) -> int:
    """'16M' -> 16777216 bytes (binary multiples, as the kernel's buffer sysctls use)."""
    num, unit = _split(value, "size (e.g. 4096, 64k, 16M)")
    if unit not in SIZE_UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {value!r} (valid: k, M, G)")
    return int(num * SIZE_UNITS[unit])


def format_rate(bps: float) -> str:
    """1e8 -> '100mbit' (exact where possible, the form tc and users write)."""
    for unit, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= mult:
            v = bps / mult
            return f"{v:g}{unit}"
    return f"{bps:g}bit"


def format_time(seconds: float) -> str:
    for unit, mult in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= mult:
            return f"{seconds / mult:g}{unit}"
    return f"{seconds / 1e-9:g}ns" if seconds else "0ms"


PACKET_UNITS = ("p", "pkt", "pkts", "packet", "packets")


def parse_queue(value: str | int | float) -> tuple[str, float]:
    """A queue limit as written: '5ms' -> ('time', 0.005), '256kb' -> ('bytes', 262144),
    100 or '100p' -> ('packets', 100). Time is the one that means the same at every scale."""
    num, unit = _split(value, "queue (e.g. 5ms, 256kb, 100p)")
    if num <= 0:
        raise ValueError(f"queue must be positive, got {value!r}")
    if unit == "" or unit in PACKET_UNITS:
        if num != int(num):
            raise ValueError(f"a queue in packets is a whole number, got {value!r}")
        return "packets", float(int(num))
    if unit in TIME_UNITS:
        return "time", round(num * TIME_UNITS[unit], 12)
    if unit in SIZE_UNITS:
        return "bytes", float(int(num * SIZE_UNITS[unit]))
    raise ValueError(f"unknown queue unit {unit!r} in {value!r} "
                     f"(valid: a time {', '.join(TIME_UNITS)}; a size {', '.join(u for u in SIZE_UNITS if u)}; packets p)")
