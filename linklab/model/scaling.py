"""Byte-sized settings scale with the rates, so a scaled run stays window-limited where the
original was: a window W over a round trip R allows W/R; scaling rates by s but keeping R
(delays are not scaled) needs W*s for the same limit. Example: receiver C of E5 (4 MiB
tcp_rmem, 28 ms) was window-limited at ~1.1 Gbit/s; unscaled at scale 0.1 it allowed 11x the
scaled links and no longer bound.

Scaled: the socket-buffer sysctls below (per node, as written by the topology or an experiment's
sysctl profile); tcp_rmem/tcp_wmem keep their minimum (a per-socket floor, not a window).
Queue limits are scaled in linklab/model/queues.py."""

from __future__ import annotations

SINGLE = ("net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default")
TRIPLE = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")
FLOOR = 4096  # bytes: one page, below which the kernel clamps anyway


def scale_sysctls(sysctls: dict[str, str], scale: float) -> tuple[dict[str, str], list[str]]:
    """(scaled copy, one note per changed key). Pure; scale 1 changes nothing."""
    if scale == 1:
        return dict(sysctls), []
    out, notes = dict(sysctls), []
    for key, value in sysctls.items():
        parts = str(value).split()
        if not all(p.isdigit() for p in parts):
            continue
        if key in SINGLE and len(parts) == 1:
            new = [str(max(int(int(parts[0]) * scale), FLOOR))]
        elif key in TRIPLE and len(parts) == 3:
            lo = int(parts[0])
            dflt = max(int(int(parts[1]) * scale), lo, FLOOR)
            new = [parts[0], str(dflt), str(max(int(int(parts[2]) * scale), dflt))]
        else:
            continue
        out[key] = " ".join(new)
        notes.append(f"{key} scaled x{scale:g} with the rates: {value} -> {out[key]}")
    return out, notes
