"""`linklab check --watch`: run the checks again whenever the lab changes, for a student working
at a prompt beside it. A change is anything the checks could see differ: the lab's settings
(`linklab set`), and its interfaces as the kernel reports them (state, MTU, addresses, bonds and
their members, qdiscs: what `linklab exec ... ip link set` changes), polled every `interval`."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable

from linklab import state
from linklab.handle import LabHandle


def fingerprint(lab_name: str) -> str:
    record = state.require(lab_name)
    handle = LabHandle.from_record(record)
    live = handle.backend.interfaces(handle.lab, [n.name for n in handle.lab.nodes])
    for ifaces in live.values():
        for it in ifaces:
            (it.get("bond_member") or {}).pop("link_failures", None)  # a count, not a setting
    seen = {"topology": record.get("topology"), "live": live}
    return hashlib.sha256(json.dumps(seen, sort_keys=True, default=str).encode()).hexdigest()


def watch(lab_name: str, run_once: Callable[[], int], say: Callable[[str], None], interval: float = 1.0,
          rounds: int | None = None) -> int:
    """Run, then again after each change, until interrupted (or `rounds` runs); returns the last
    run's exit code."""
    rc, done = run_once(), 1
    last = fingerprint(lab_name)
    say(f"linklab: watching lab {lab_name} for changes (Ctrl-C to stop)")
    while rounds is None or done < rounds:
        time.sleep(interval)
        now = fingerprint(lab_name)
        if now == last:
            continue
        time.sleep(interval)  # let a change in several steps (a `set` rebuilding a bond) finish
        say("linklab: the lab changed: checking again")
        rc, done = run_once(), done + 1
        last = fingerprint(lab_name)
    return rc
