"""The flags a repetition carries (linklab/measure/disturbance.py judges them), as its row stores
them, and what a repetition flagged about the host is worth: one policy for sweeps
(linklab/sweep/engine.py), checks (linklab/check/kinds/measured.py), reports and the verdict.

Two flags are about the host the lab ran on, not about the lab: host_disturbed (other work on the
host took its CPU) and host_stolen (the hypervisor under the host took it). A repetition carrying
either was not measured on a quiet host, and its figures say how busy the machine was: the verdict
judges a point on its quiet repetitions where it has any (a difference found on busy ones only is
inconclusive), a check's median outside its bounds with one is inconclusive, a baseline counts only
quiet ones, and a flag comparison between arms leaves them out.

Only host_disturbed is measured again (once more, right away), by sweeps and checks alike, because
only then can the next attempt be expected to be quiet: other work on the host (another session's
tests, a build) comes and goes between repetitions, while the hypervisor's steal lasts minutes on
end (bench/README.md, CI), so a stolen repetition measured again a pause later is stolen from again,
and re-measuring would double every repetition's time on such a machine for nothing. A stolen
repetition is kept, flagged with its evidence; `linklab ab` interleaves its arms so steal lands on
both alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

HOST_DISTURBED = "host_disturbed"
HOST_STOLEN = "host_stolen"
HOST_FLAGS = frozenset({HOST_DISTURBED, HOST_STOLEN})  # about the host the lab ran on, not about the lab
MEASURED_AGAIN = frozenset({HOST_DISTURBED})  # a repetition carrying one is measured once more (module text)

# How a row stores its flags: names joined by NAMES_SEP, each one's evidence joined by EVIDENCE_SEP
# in the same order (so no evidence may contain EVIDENCE_SEP).
NAMES_SEP, EVIDENCE_SEP = ";", "; "


def stored(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """(name, evidence) pairs as a row stores them: {"flags": ..., "flag_evidence": ...}."""
    pairs = list(pairs)
    return {"flags": NAMES_SEP.join(n for n, _ in pairs), "flag_evidence": EVIDENCE_SEP.join(e for _, e in pairs)}


def row_flags(row: Mapping[str, Any]) -> dict[str, str]:
    """A row's flags, name -> evidence. The store writes one string, "core_saturated;queue_dropped",
    with the evidence in `flag_evidence`; rows from elsewhere may carry a list of names or of
    {name, evidence} mappings, or a mapping name -> evidence."""
    val = row.get("flags")
    if isinstance(val, dict):
        return {str(k): str(v) for k, v in val.items()}
    if isinstance(val, list):
        return {str(x.get("name") or x.get("flag") or "?") if isinstance(x, dict) else str(x):
                str(x.get("evidence", "")) if isinstance(x, dict) else "" for x in val if x}
    names = [x for x in str(val or "").split(NAMES_SEP) if x.strip()]
    evidence = str(row.get("flag_evidence") or "")
    parts = evidence.split(EVIDENCE_SEP)
    if len(parts) == len(names):
        return dict(zip(names, parts))
    return {n: evidence if i == 0 else "" for i, n in enumerate(names)}


def host_busy(row: Mapping[str, Any]) -> bool:
    """Whether the row carries a flag about the host (HOST_FLAGS): it was not measured on a quiet host."""
    return not HOST_FLAGS.isdisjoint(row_flags(row))


def quiet(rows: Iterable[Mapping[str, Any]]) -> list:
    """The rows measured on a quiet host: those that carry neither host flag."""
    return [r for r in rows if not host_busy(r)]


def measure_again(row: Mapping[str, Any]) -> bool:
    """Whether a repetition is to be measured once more: it carries a flag of MEASURED_AGAIN."""
    return not MEASURED_AGAIN.isdisjoint(row_flags(row))
