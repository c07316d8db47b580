"""Two arms measured side by side: each arm's sweep runs stepwise in a process of its own (its
code, its lab), and this driver tells both what to do, point by point.

At each point both arms are prepared (lab set to the point, pre-flight, servers), then measured
in ABBA order: A B B A for two pairs, A B B A A B for three; the next point starts with B (BAAB),
so neither arm is always first. Whatever slows the machine for a minute (the emulator's speed,
a neighbour, steal) lands on both arms at the point alike, and the paired verdict cancels it.
The experiment's pause separates every two measurements, whichever arms they are.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable

from linklab import fsutil, procs, runner, state
from linklab.ab import manifest as ab_manifest
from linklab.ab.arms import Arm
from linklab.ab.manifest import AB_FILE
from linklab.errors import LinklabError, StateError, UsageError
from linklab.sweep.progress import Progress
from linklab.sweep.stepwise import PROTOCOL

HELLO_TIMEOUT_S = 900.0  # an arm's lab built (containers, OVS and controllers in a software-emulated VM)
PREPARE_TIMEOUT_S = 600.0  # a point's reconfiguration (a bond rebuilt), pre-flight and servers
MEASURE_SLACK_S = 300.0  # beyond the experiment's own duration: a measurement that hangs ends the run
END_TIMEOUT_S = 300.0  # an arm's sweep putting its lab back and finishing its run


def order(point_index: int, pairs: int) -> list[str]:
    """The arms' measuring order at one point: ABBA..., mirrored on every other point."""
    seq = []
    for k in range(pairs):
        seq += ["a", "b"] if k % 2 == 0 else ["b", "a"]
    if point_index % 2:
        seq = ["b" if x == "a" else "a" for x in seq]
    return seq


class ArmFailed(LinklabError):
    """An arm's sweep stopped or broke the protocol."""


class ArmProcess:
    """One arm's `linklab sweep --stepwise`: commands in on stdin, one JSON reply per line out."""

    def __init__(self, arm: Arm, pairs: int, quick: bool, log: Path):
        self.arm = arm
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "ab")
        self.proc = runner.start(arm.sweep_argv(pairs, quick), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=self._log, env=arm.env(), cwd=arm.source)
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True, name=f"arm-{arm.name}").start()
        self.hello: dict[str, Any] = {}

    def _read(self, out: IO[bytes]) -> None:
        for line in out:
            self._lines.put(line.decode(errors="replace"))
        self._lines.put(None)  # it closed its stdout: it ended

    def receive(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise ArmFailed(f"arm {self.arm.name}: no answer within {timeout:.0f} s{self._tail()}") from None
        if line is None:
            self.proc.wait(timeout=30)
            raise ArmFailed(f"arm {self.arm.name}'s sweep exited {self.proc.returncode}{self._tail()}")
        try:
            return json.loads(line)
        except ValueError:
            raise ArmFailed(f"arm {self.arm.name} said something not in the protocol: {line.strip()[:200]}") from None

    def send(self, **cmd: Any) -> None:
        try:
            self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ArmFailed(f"arm {self.arm.name}'s sweep is gone{self._tail()}") from None

    def ask(self, timeout: float, **cmd: Any) -> dict[str, Any]:
        self.send(**cmd)
        return self.receive(timeout)

    def greet(self) -> dict[str, Any]:
        msg = self.receive(HELLO_TIMEOUT_S)
        hello = msg.get("hello")
        if not isinstance(hello, dict) or hello.get("protocol") != PROTOCOL:
            raise ArmFailed(f"arm {self.arm.name}'s linklab speaks another stepwise protocol ({msg!r:.200}; this one "
                            f"speaks {PROTOCOL}): give a revision made since `linklab ab` exists")
        self.hello = hello
        return hello

    def end(self, down: bool) -> None:
        """Tell it to finish (its lab put back, its run complete; `down`: then its lab taken down,
        which an arm older than that leaves to take_down) and wait for it."""
        if self.proc.poll() is None:
            try:
                self.ask(END_TIMEOUT_S, do="end", down=down)
                self.proc.stdin.close()
                self.proc.wait(timeout=END_TIMEOUT_S)
            except (ArmFailed, subprocess.TimeoutExpired):
                pass
        self.stop()

    def stop(self) -> None:
        procs.stop_popen([self.proc])
        self._log.close()

    def _tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace").strip().splitlines()[-15:]
        except OSError:
            return ""
        return ("; its last lines (" + str(self.log) + "):\n  " + "\n  ".join(text)) if text else ""


@dataclass
class Plan:
    """The points both arms measure (matched by their axes), and those of one arm that match none
    of the other's (unmatched: not measured)."""

    common: list[tuple[dict[str, Any], dict[str, Any]]]  # (A's point, B's point)
    unmatched: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def match_points(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> Plan:
    def key(p):
        return json.dumps(p["axes"], sort_keys=True, default=str)

    b_by = {key(p): p for p in b}
    a_keys = {key(p) for p in a}
    return Plan([(p, b_by[key(p)]) for p in a if key(p) in b_by],
                {"a": [p for p in a if key(p) not in b_by], "b": [p for p in b if key(p) not in a_keys]})


def drive(arms: list[Arm], run_dir: Path, pairs: int, quick: bool, say=print, keep_labs: bool = False,
          subset: dict[str, set[str]] | None = None, keep: Callable[[dict[str, Any]], bool] | None = None,
          reuse_labs: bool = False) -> dict[str, Any]:
    """Measure both arms interleaved; the A/B manifest (also written to run_dir/ab.json). `subset`
    (--only): the points whose axes take these values (as written in the matrix), the others not
    measured; `keep`: only the points whose axes it keeps; `reuse_labs`: the arms' labs, if up,
    are these arms' own, left up by their last measurement (a second one: confirm.py)."""
    started = time.monotonic()
    manifest: dict[str, Any] = ab_manifest.read(run_dir)
    for arm in arms if not reuse_labs else ():
        take_down(arm, say)  # a lab left by an earlier A/B (another revision's, maybe): built anew
    labs = ", ".join(a.lab for a in arms)
    say(f"linklab ab: starting both arms' sweeps again (in their labs, still up: {labs})" if reuse_labs
        else f"linklab ab: starting both arms' sweeps (each builds its lab: {labs})")
    procs_ = {arm.name: ArmProcess(arm, pairs, quick, run_dir / f"{arm.name}.log") for arm in arms}
    try:
        hellos = {name: p.greet() for name, p in procs_.items()}
        manifest["runs"] = {name: h["run"] for name, h in hellos.items()}
        plan = match_points(hellos["a"]["points"], hellos["b"]["points"])
        if subset:
            plan.common = [(pa, pb) for pa, pb in plan.common if selected(pa["axes"], subset)]
        if keep:
            plan.common = [(pa, pb) for pa, pb in plan.common if keep(pa["axes"])]
        if not plan.common:
            raise StateError("the arms have no point in common: their experiments' matrices differ")
        for name, unmatched in plan.unmatched.items():
            if unmatched:
                say(f"  only arm {name} has {len(unmatched)} point(s): not measured "
                    f"({', '.join(p['key'] for p in unmatched)})")
        manifest.update(points=len(plan.common), unmatched={k: [p["key"] for p in v] for k, v in plan.unmatched.items()})
        fsutil.write_json_atomic(run_dir / AB_FILE, manifest)
        pause = max(float(h.get("pause") or 0) for h in hellos.values())
        progress = Progress(len(plan.common) * 2 * pairs)
        measure_timeout = MEASURE_SLACK_S + 10 * max(60.0, pause)
        for i, (pa, pb) in enumerate(plan.common):
            point = {"a": pa, "b": pb}
            for name, p in procs_.items():  # both prepare at once: nothing is measured meanwhile
                p.send(do="prepare", point=point[name]["id"])
            for name, p in procs_.items():
                reply = p.receive(PREPARE_TIMEOUT_S)
                if not reply.get("ok"):
                    progress.log(f"  arm {name}: {reply.get('error')}")
                elif not reply.get("preflight_ok"):
                    progress.log(f"  arm {name}: pre-flight failed at {pa['key']}: {'; '.join(reply.get('problems') or [])}")
            reps = {"a": 0, "b": 0}
            for j, name in enumerate(order(i, pairs)):
                if j:
                    time.sleep(pause)
                reps[name] += 1
                progress.start_unit(f"point {i + 1}/{len(plan.common)} {pa['key']}: {name.upper()} rep {reps[name]}")
                reply = procs_[name].ask(measure_timeout, do="measure", point=point[name]["id"], rep=reps[name])
                if not reply.get("ok") or reply.get("error"):
                    progress.log(f"  arm {name} rep {reps[name]} at {pa['key']}: {reply.get('error')}")
                progress.finish_unit()
        progress.close()
        # Both at once: each puts its lab back and writes its run (and takes its lab down), a few
        # seconds of work apiece in a software-emulated VM.
        enders = [threading.Thread(target=p.end, kwargs={"down": not keep_labs}, name=f"end-{name}")
                  for name, p in procs_.items()]
        for t in enders:
            t.start()
        for t in enders:
            t.join()
        manifest.update(complete=True)
    finally:
        for p in procs_.values():
            p.stop()
        if not keep_labs:
            for arm in arms:
                take_down(arm, say)
        manifest.update(wall_s=round(time.monotonic() - started, 1),
                        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        fsutil.write_json_atomic(run_dir / AB_FILE, manifest)
    return manifest


def selected(axes: dict[str, Any], subset: dict[str, set[str]]) -> bool:
    """Whether a point (its axes) is in the subset `--only` keeps."""
    return all(str(axes.get(axis)) in values for axis, values in subset.items())


def take_down(arm: Arm, say) -> None:
    """The arm's lab, if up, taken down by the arm's own code (which built it)."""
    if state.load(arm.lab) is None:
        return
    res = runner.run(arm.down_argv(), check=False, timeout=600, env=arm.env())
    if not res.ok:
        say(f"  arm {arm.name}: `linklab down {arm.lab}` exited {res.returncode}: {(res.stderr or res.stdout).strip()[-300:]}")


def complete_runs(root: Path, experiment: str) -> list[tuple[Path, dict[str, Any]]]:
    """The complete A/B runs of an experiment under RESULTS/ab/<experiment>/, oldest first, each
    with its manifest (ab.json)."""
    out = []
    for d in sorted((root / "ab" / experiment).glob("*/")):
        try:
            m = ab_manifest.read(d)
        except UsageError:
            continue
        if m.get("complete") and set(m.get("runs") or {}) == {"a", "b"}:
            out.append((d, m))
    return out


def alike(manifest: dict[str, Any]) -> bool:
    """Whether an A/B run's arms were the same revision with the same settings: an A/A run."""
    arms = manifest.get("arms") or {}
    return len(arms) == 2 and len({(v.get("commit"), tuple(v.get("overrides") or ())) for v in arms.values()}) == 1
