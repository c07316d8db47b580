"""Crash safety and ownership on real labs: `kill -9` at seeded random moments during up, set,
sweep and down, each followed by recovery (a rerun of the command, or `linklab clean`) and a
residue check; and `clean` next to live labs.

The killed process is a fork of this (already imported) interpreter running the same lab
functions the CLI runs: a cold `python -m linklab` costs ~12 s under TCG, which would make two dozen
kills take far too long. Only that process is killed; what it started in its own sessions
(iperf3 servers) lives on, as after a real crash. LINKLAB_KILL_SEED picks other moments.
"""

import csv
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyroute2 import netns

from linklab import lab, state
from linklab.backends.linux.ownership import read_mark
from linklab.backends.linux.names import current_home, mark, netns_name, parse_mark
from linklab.errors import LinklabError
from linklab.sweep.engine import Options, run

DATA = Path(__file__).resolve().parents[1] / "data"
TOPO = DATA / "one_link.yaml"
SEED = int(os.environ.get("LINKLAB_KILL_SEED", "20261122"))
# Kills per command (up, set, sweep, down). 3 each keeps CI's kernel tier within its time; a
# longer campaign: LINKLAB_KILLS_EACH=25 with other LINKLAB_KILL_SEEDs.
KILLS_EACH = int(os.environ.get("LINKLAB_KILLS_EACH", "3"))
AIM_TRIES = 3  # a kill that came after its command finished is aimed again, earlier
QUIET = dict(say=lambda *_: None)


def forked(fn) -> int:
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            fn()
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        os._exit(code)
    return pid


def kill_at(fn, delay: float) -> bool:
    """Run fn in a forked linklab process and SIGKILL it after `delay` s; True if the kill landed
    before it finished."""
    pid = forked(fn)
    time.sleep(delay)
    landed = os.waitpid(pid, os.WNOHANG) == (0, 0)  # (a finished child is reaped by this call)
    if landed:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return landed


def timed(fn) -> float:
    t0 = time.monotonic()
    pid = forked(fn)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, fn
    return time.monotonic() - t0


def root_snapshot() -> str:
    """The VM's own namespace: a lab must put nothing here (interfaces, routes, qdiscs)."""
    out = [subprocess.run(argv, capture_output=True, text=True).stdout for argv in
           (["ip", "-o", "link"], ["ip", "-o", "addr"], ["ip", "route"], ["tc", "qdisc"])]
    return "\n".join(out)


def residue(name: str, expect_up: bool) -> list[str]:
    """Everything wrong with lab `name` after recovery: [] when clean."""
    problems = []
    marked = {ns: parse_mark(read_mark(ns)) for ns in netns.listnetns()}
    mine = sorted(ns for ns, m in marked.items() if m and m.lab == name)
    st = state.load(name)
    want = sorted(netns_name(name, n) for n in ("h1", "h2"))
    if expect_up:
        if st is None or st.get("status") != "up":
            problems.append(f"state {st and st.get('status')}")
        if mine != want:
            problems.append(f"namespaces {mine}, want {want}")
        lab_id = (st or {}).get("owned", {}).get("id")
        problems += [f"{ns} has mark {marked[ns]}" for ns in mine if marked[ns].id != lab_id]
        for ns in mine:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            problems += [f"process {p} left in {ns}" for p in pids]
    else:
        if st is not None:
            problems.append("state file left")
        if mine:
            problems.append(f"namespaces left: {mine}")
        problems += [f"hosts dir {d}" for d in Path("/etc/netns").glob(f"ll-{name}-*")]
        if state.lock_path(name).exists():
            problems.append("lock file left")
    if state.lock_path(name).exists():  # (try_locked would make the file it looks at)
        with state.try_locked(name) as free:
            if not free:
                problems.append("stale lock held")
    problems += [f"temp file {p}" for p in state.labs_dir().glob(".*tmp*")]
    stray = subprocess.run(["pgrep", "-x", "iperf3"], capture_output=True, text=True).stdout.split()
    problems += [f"iperf3 pid {p} still running" for p in stray]
    return problems


def lock_holders(path: Path) -> list[str]:
    """Who holds a flock on `path` (pid and command line), from /proc/locks: the evidence a
    'stale lock held' or 'judged live' residue needs."""
    try:
        inode = path.stat().st_ino
    except FileNotFoundError:
        return []
    out = []
    for line in Path("/proc/locks").read_text().splitlines():
        f = line.split()
        if len(f) > 5 and f[5].split(":")[-1] == str(inode):
            pid = f[4]
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                cmd = "?"
            out.append(f"{pid} {cmd}")
    return out


def recover(op: str, name: str, fn) -> str:
    """The user's way back: rerun the command; if there is no lab left to run it on, clean.
    Returns what the rerun said when it refused (evidence for the log)."""
    try:
        fn()
        return ""
    except LinklabError as e:
        said = f"rerun refused: {e}; lock holders {lock_holders(state.lock_path(name))}"
        lab.clean(name, **QUIET)
        if op != "down":
            fn()
        return said


@pytest.mark.timeout(1200)  # 12 commands killed and recovered, 3 of them sweeps (~3-4 min)
def test_kill_9_anywhere_in_up_set_sweep_down_leaves_nothing_behind(tmp_path, record_property):
    rng = random.Random(SEED)
    name = "killlab"
    before = root_snapshot()
    up = lambda: lab.up(TOPO, name=name, **QUIET)  # noqa: E731
    down = lambda: lab.down(name, **QUIET)  # noqa: E731
    mtus = iter(rng.choice([1500, 4000, 9000]) for _ in range(1000))
    set_ = lambda m=None: lab.set_params(name, [("links[0].mtu", next(mtus))], **QUIET)  # noqa: E731
    results = tmp_path / "results"
    sweeps = iter(range(1000))
    sweep_dir = {"dir": None}

    def sweep():
        run(DATA / "kill.yaml", Options(results=sweep_dir["dir"], lab_name=name), **QUIET)

    # How long each takes here, to aim the kills inside it.
    t = {"up": timed(up), "set": timed(set_), "down": timed(down)}
    timed(up)
    sweep_dir["dir"] = results / "probe"
    t["sweep"] = timed(sweep)
    plan = ["up"] * KILLS_EACH + ["set"] * KILLS_EACH + ["sweep"] * KILLS_EACH + ["down"] * KILLS_EACH
    rng.shuffle(plan)
    kills, leftovers, log = 0, [], []
    for i, op in enumerate(plan):
        # Aim inside the command: its time varies run to run (down takes ~0.3 s now), and a
        # delay near the measured time often lands after it finished (23 of 30 landed once).
        # A command that finished first runs again with the kill aimed at half the delay: on a
        # host whose hypervisor steals a quarter of the CPU in bursts a command's time moves 2x
        # between runs (fresh-clone CI 2026-11-26: 3 of 12 finished first, then 4 of 12).
        delay = rng.uniform(0.0, 0.7 * t[op])
        for _ in range(AIM_TRIES):
            # Bring the lab to where the command starts from.
            if op == "up" and state.load(name):
                down()
            elif op != "up" and not state.load(name):
                up()
            if op == "sweep":
                sweep_dir["dir"] = results / f"run{next(sweeps)}"
            fn = {"up": up, "set": set_, "sweep": sweep, "down": down}[op]
            landed = kill_at(fn, delay)
            said = recover(op, name, fn)
            got = residue(name, expect_up=op != "down")
            if got and said:
                got.append(said)
            if op == "sweep":
                got += sweep_problems(sweep_dir["dir"])
            log.append(f"{i:2d} {op:5s} kill at {delay:5.2f}s{'' if landed else ' (finished first)'}: "
                       f"{got or 'clean'}")
            leftovers += got
            if landed:
                break
            delay /= 2
        kills += landed
    if state.load(name):
        down()
    assert root_snapshot() == before, "the VM's own namespace changed"
    print("\n".join(log))
    print(f"kills: {kills} of {len(plan)}, leftovers: {len(leftovers)}")
    # Kept in the JUnit report whether the test passes or not: the tally is the evidence.
    record_property("kills_landed", kills)
    record_property("kills_planned", len(plan))
    record_property("leftovers", len(leftovers))
    record_property("kill_log", " | ".join(log))
    assert leftovers == [], "\n".join(log)
    assert kills >= len(plan) * 0.8, f"only {kills} kills landed inside the command:\n" + "\n".join(log)


def sweep_problems(results: Path) -> list[str]:
    runs = list(results.glob("itkill/*/"))
    if len(runs) != 1:
        return [f"{len(runs)} runs in {results}"]
    with open(runs[0] / "results.csv") as f:
        keys = [(r["point_id"], r["rep"]) for r in csv.DictReader(f)]
    problems = [] if len(keys) == 4 and len(set(keys)) == 4 else [f"rows {keys}, want 2 points x 2 reps once each"]
    problems += [f"partial file {p}" for p in runs[0].rglob("*.tmp*")]
    return problems


def test_clean_next_to_live_labs_removes_only_a_crashed_labs_leftovers():
    live = ["cleana", "cleanb"]
    for n in live:
        lab.up(TOPO, name=n, **QUIET)
    foreign = "ll-cleanx-h1"  # a same-looking lab of another checkout
    user_ns = "ll-cleana-mine"  # a user's own namespace, no mark
    try:
        # A lab killed half-way through `up`: its state says building, some namespaces exist.
        pid = forked(lambda: lab.up(TOPO, name="cleanc", **QUIET))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(netns.listnetns()) & {netns_name("cleanc", "h1")}:
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert state.load("cleanc") is not None, "the kill landed before the state file was written"
        netns.create(foreign)
        subprocess.run(["ip", "-n", foreign, "link", "set", "lo", "alias", mark("cleanx", "x1", "0th3rch3ck0")], check=True)
        netns.create(user_ns)

        dry = lab.clean(None, dry_run=True, **QUIET)
        assert any("cleanc" in r for r in dry) and state.load("cleanc") is not None
        removed = lab.clean(None, **QUIET)
        assert any("cleanc" in r for r in removed)
        assert state.load("cleanc") is None
        assert not [ns for ns in netns.listnetns() if ns.startswith("ll-cleanc-")]
        assert {foreign, user_ns} <= set(netns.listnetns())  # not provably abandoned: untouched
        for n in live:  # both live labs survive, and still carry packets
            assert state.load(n)["status"] == "up"
            res = subprocess.run(["ip", "netns", "exec", netns_name(n, "h1"), "ping", "-c1", "-W2", "h2"],
                                 capture_output=True, text=True)
            assert res.returncode == 0, res.stdout + res.stderr
        assert residue("cleanc", expect_up=False) == []
        assert current_home() in read_mark(netns_name("cleana", "h1"))
    finally:
        for ns in (foreign, user_ns):
            if ns in netns.listnetns():
                netns.remove(ns)
        for n in live + ["cleanc"]:
            if state.load(n):
                lab.down(n, **QUIET)
