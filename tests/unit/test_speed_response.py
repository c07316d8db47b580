"""A baseline's speed response (linklab/report/speed.py): per point, how far a machine of another
speed moves each metric, measured from runs on such a machine and applied by the gate at a run's
own CPU level; and the host's steal, kept apart from other work (host_stolen)."""

import json
import math

import pytest

from linklab.cli import main
from linklab.errors import UsageError
from linklab.measure import disturbance
from linklab.report import metrics
from linklab.report.compare import HARMLESS, compare, render
from linklab.report.points import row_flags
from linklab.report.noise import measure as measure_noise
from linklab.report.speed import SPEED_FILE, SpeedResponse
from linklab.report.speed import measure as measure_speed
from test_report_compare import changed, machine, write

THR = metrics.BY_KEY["throughput_mbps"]
RR450_1 = "balance-rr mtu=450 streams=1"  # p006


def slow_runs(base, level=1.96, rr450=(0.79, 0.77)):
    """Two runs on a machine `level` slower: balance-rr MTU 450 one stream loses what it lost on
    this machine kind (-21 %, -23 %), every other point keeps its rate."""
    return [changed(base, machine(level, thr={"p006": f})) for f in rr450]


def thr_failures(res) -> set[str]:
    return {c.point for c in res.failures if c.what == THR.title}


def test_exponents_are_the_worst_the_runs_saw_per_point(e1base):
    base, _ = e1base
    sr = measure_speed(base, slow_runs(base))
    key = next(k for k in sr.exponents if dict(json.loads(k))["bond_mode"] == "balance-rr"
               and dict(json.loads(k))["mtu"] == "450" and dict(json.loads(k))["streams"] == "1")
    e = sr.exponents[key][THR.key]
    assert e["low"] == pytest.approx(math.log(0.77) / math.log(1.96), rel=0.02)
    assert e["high"] == pytest.approx(math.log(0.79) / math.log(1.96), rel=0.02)
    assert e["n"] == 2
    # a point that kept its rate has (about) no response; CPU is there as what it did beyond the
    # level, and here it moved with the level exactly
    others = [per[THR.key]["low"] for k, per in sr.exponents.items() if k != key]
    assert len(others) == 11 and max(abs(x) for x in others) < 0.01
    cpu = [e for per in sr.exponents.values() for mk, e in per.items() if metrics.BY_KEY[mk].machine == "cost"]
    assert len(cpu) >= 24 and max(abs(e["low"]) for e in cpu) < 0.01
    assert sr.levels == pytest.approx([1.96, 1.96], rel=0.01)


def test_the_gate_gives_the_measured_room_to_its_point_only(e1base):
    base, nf = e1base
    sr = measure_speed(base, slow_runs(base))
    # CI's machine: x2.16, and this point lost 24 % (the power law gives it 0.77 ** (log 2.16 / log 1.96)).
    ci = changed(base, machine(2.16, thr={"p006": 0.76}))
    assert RR450_1 in thr_failures(compare(base, ci, noise=nf)), "the general allowance alone is too narrow"
    res = compare(base, ci, noise=nf, speed=sr)
    assert not thr_failures(res), render(res)
    assert any("speed response measured from 2 runs at x1.96" in n and "extrapolated" in n for n in res.notes)
    # Beyond what it measured: -40 % there still fails.
    assert thr_failures(compare(base, changed(base, machine(2.16, thr={"p006": 0.60})), noise=nf, speed=sr)) == {RR450_1}
    # The room is that point's: -25 % at a point that kept its rate fails, and -25 % everywhere
    # is caught at every other point but the two whose busiest core (56-60 %) saturates at x2.16
    # (machine.cpu_bound_room: 17-23 % room there).
    assert thr_failures(compare(base, changed(base, machine(2.16, thr={"p000": 0.75})), noise=nf, speed=sr)) == {
        "802.3ad mtu=450 streams=1"}
    everywhere = thr_failures(compare(base, changed(base, machine(2.16, thr={"p": 0.75})), noise=nf, speed=sr))
    assert len(everywhere) == 9 and not everywhere & {
        RR450_1, "balance-rr mtu=450 streams=20", "balance-rr mtu=1500 streams=20"}


def test_a_response_applies_only_on_its_side_of_the_baseline_s_speed(e1base):
    base, nf = e1base
    sr = measure_speed(base, slow_runs(base))
    drop = {"p006": 0.76}
    # The baseline's own machine (x1.05): no room, the drop fails.
    assert RR450_1 in thr_failures(compare(base, changed(base, machine(1.05, thr=drop)), noise=nf, speed=sr))
    # A faster machine (x0.6): a slower machine's response says nothing of it.
    assert RR450_1 in thr_failures(compare(base, changed(base, machine(0.6, thr=drop)), noise=nf, speed=sr))


def test_runs_at_the_baseline_s_speed_are_refused_and_noise_refuses_the_slow_ones(e1base):
    base, _ = e1base
    with pytest.raises(UsageError, match=r"x1\.00 the baseline's.*nothing to learn from"):
        measure_speed(base, [changed(base, machine(1.0))])
    with pytest.raises(UsageError, match="both faster and slower"):
        measure_speed(base, [changed(base, machine(1.9)), changed(base, machine(0.5))])
    with pytest.raises(UsageError, match=r"x1\.90 the baseline's.*not a quiet rerun") as e:
        measure_noise(base, [changed(base, machine(1.0))] * 2 + [changed(base, machine(1.9))])
    assert "linklab speed" in e.value.hint


def flagged(pid: str, name: str, evidence: str):
    """A row change: the point's repetitions carry the flag `name` with its evidence."""
    def fn(r):
        if r["point_id"].startswith(pid):
            r["flags"], r["flag_evidence"] = name, evidence
    return fn


def test_flags_seen_at_the_slower_speed_are_not_new_there(e1base):
    base, nf = e1base
    emulator_rtt = flagged("p006", "emulator_rtt", "idle RTT 0.61 ms, the path asks 0.003 ms")

    def slow_with_flag(level):
        f = machine(level)
        return changed(base, lambda r: (f(r), emulator_rtt(r)))

    sr = measure_speed(base, [slow_with_flag(1.96)])
    flag = lambda res: [c for c in res.checks if c.rule == "flag"]  # noqa: E731
    assert not flag(compare(base, slow_with_flag(2.1), noise=nf, speed=sr))  # seen there: not new
    # on the baseline's own machine the same flag is new
    assert [c.verdict for c in flag(compare(base, slow_with_flag(1.0), noise=nf, speed=sr))] == ["FAIL"]


def test_speed_cli_writes_beside_the_baseline_and_compare_reads_it(tmp_path, e1base, capsys):
    base, _ = e1base
    b = write(tmp_path, base, "base")
    runs = [write(tmp_path, r, f"slow{i}") for i, r in enumerate(slow_runs(base))]
    assert main(["speed", str(b), *map(str, runs)]) == 0
    out = capsys.readouterr().out
    # balance-rr MTU 450 one stream lost 21-23 % there: its throughput line says so
    assert "bond_mode=balance-rr mtu=450 streams=1" in out and "at x1.96: x0.77-0.79" in out, out
    sr = SpeedResponse.load(b / SPEED_FILE)
    assert sr.levels == pytest.approx([1.96, 1.96], rel=0.01)
    new = write(tmp_path, changed(base, machine(2.16, thr={"p006": 0.76})), "new")
    assert main(["compare", str(b), str(new)]) == 0, capsys.readouterr().out
    (b / SPEED_FILE).write_text("{}")
    assert main(["compare", str(b), str(new)]) == 2  # a damaged file is bad input, never ignored
    assert "not a speed response" in capsys.readouterr().err


# -- the host's steal, apart from other work ---------------------------------------------------

def test_steal_is_its_own_share_and_flag_and_never_other_work():
    from linklab.vm import hostcpu
    # 2 cores, 5 s: 200 of 1000 ticks stolen by the hypervisor, 440 QEMU's, 160 idle
    s = [{"t": 100.0, "total": 1000, "idle": 400, "steal": 50, "qemu": 300, "ncpu": 2},
         {"t": 105.0, "total": 2000, "idle": 560, "steal": 250, "qemu": 740, "ncpu": 2}]
    w = hostcpu.window(s, 100.0, 105.0)
    assert w == {"host_busy_pct": 84.0, "host_qemu_pct": 44.0, "host_steal_pct": 20.0, "host_other_pct": 20.0,
                 "host_cpus": 2}
    f = disturbance.flags(w)
    assert f["flags"] == "host_stolen" and "the hypervisor took 20.0% of the host's 2 cores" in f["flag_evidence"]
    # beside another flag, each keeps its own evidence (CI's first run with it printed an empty one)
    both = disturbance.flags({**w, "host_other_pct": 30.0})
    assert both["flags"] == "host_disturbed;host_stolen"
    assert row_flags(both)["host_stolen"].startswith("the hypervisor took 20.0%")
    assert row_flags(both)["host_disturbed"].startswith("host 84.0% busy")
    # Below the threshold: nothing; samples recorded before steal was (no "steal" key) count none.
    assert disturbance.flags({**w, "host_steal_pct": 9.9})["flags"] == ""
    old = [{k: v for k, v in x.items() if k != "steal"} for x in s]
    assert hostcpu.window(old, 100.0, 105.0)["host_steal_pct"] == 0.0


def test_a_rows_stolen_room_is_the_steal_share_from_the_threshold_on():
    from linklab.report.machine import row_stolen_room
    assert row_stolen_room({"host_steal_pct": "23.7"}) == pytest.approx(0.237)
    assert row_stolen_room({"host_steal_pct": str(disturbance.HOST_STEAL_PCT)}) == pytest.approx(0.1)
    # below the threshold, not recorded (a native run), empty or damaged: no room
    for row in ({"host_steal_pct": "9.9"}, {}, {"host_steal_pct": ""}, {"host_steal_pct": "nan"},
                {"host_steal_pct": None}):
        assert row_stolen_room(row) == 0.0, row


def test_a_stolen_repetition_is_listed_never_failed(e1base):
    base, nf = e1base

    stolen = flagged("p009", "host_stolen", "the hypervisor took 30.6% of the host's 2 cores (steal, >= 10%), lab VM 54.8%")

    res = compare(base, changed(base, stolen), noise=nf)
    assert res.ok, render(res)
    listed = [c for c in res.checks if c.rule == "stolen"]
    assert len(listed) == 1 and listed[0].verdict == HARMLESS and "30.6%" in listed[0].new_text
    assert not [c for c in res.checks if c.rule == "flag"]


def test_a_stolen_point_may_lose_the_share_the_hypervisor_took(e1base):
    # fc7, 2026-11-26, level x1.91: balance-rr MTU 1500, one stream, -23 % at 23.7 % steal.
    base, nf = e1base

    def run(thr, steal):
        slow = machine(1.91, thr={"p008": thr})

        def fn(r):
            slow(r)
            if r["point_id"].startswith("p008") and steal:
                r["host_steal_pct"], r["flags"] = steal, "host_stolen"
                r["flag_evidence"] = f"the hypervisor took {steal}% of the host's 2 cores (steal, >= 10%), lab VM 51%"
        return changed(base, fn)

    rr1500 = "balance-rr mtu=1500 streams=1"
    assert not thr_failures(compare(base, run(0.77, 23.7), noise=nf))
    assert thr_failures(compare(base, run(0.77, None), noise=nf)) == {rr1500}   # unstolen: too much
    assert thr_failures(compare(base, run(0.77, 5.0), noise=nf)) == {rr1500}    # below the flag: no room
    assert thr_failures(compare(base, run(0.60, 23.7), noise=nf)) == {rr1500}   # beyond what was taken


def _faster():
    """E1's 2026-11-27 baseline with its speed response (from a x0.38 machine), and fresh-clone
    CI's gate run on a machine 2x faster (x0.49) with the confirmation of its 4 failed points."""
    from linklab.report.noise import for_baseline
    from linklab.report.runs import Run
    from linklab.report.speed import for_baseline as speed_for
    from conftest import BASELINE_E1
    data = BASELINE_E1.parent
    base = Run.load(data / "e1-baseline-2026-11-27")
    return (base, for_baseline(base), speed_for(base), Run.load(data / "e1-faster-2026-11-28"),
            Run.load(data / "e1-faster-2026-11-28-repeat"))


RECV = metrics.BY_KEY["receiver_cpu_pct"]


def _without(sr: SpeedResponse, drop) -> SpeedResponse:
    """The response with the metrics `drop(metric)` names left out."""
    return SpeedResponse(sr.path, {k: {mk: e for mk, e in per.items() if not drop(metrics.BY_KEY[mk])}
                                   for k, per in sr.exponents.items()}, sr.flags, sr.meta)


def _without_cpu(sr: SpeedResponse) -> SpeedResponse:
    """The response as fc29's gate had it: no CPU metric in it."""
    return _without(sr, lambda m: m.machine == "cost")


def test_a_faster_machine_s_cpu_is_judged_by_each_point_s_measured_response():
    base, nf, sr, fast, _ = _faster()
    # The level alone for CPU (the response without its CPU metrics, as fc29's gate had it): the
    # receiver's iperf3 did not get cheaper with the machine, and divided by x0.49 it failed four
    # points with nothing changed.
    alone = compare(base, fast, noise=nf, speed=_without_cpu(sr))
    assert {(c.point, c.what) for c in alone.failures} == {
        (p, RECV.title) for p in ("802.3ad mtu=450 streams=20", "balance-rr mtu=450 streams=1",
                                  "balance-rr mtu=450 streams=20", "balance-rr mtu=1500 streams=20")}, render(alone)
    res = compare(base, fast, noise=nf, speed=sr)
    assert res.ok, render(res)
    # Each point's CPU divided by its own factor: the receiver's at balance-rr MTU 450, 20 streams
    # by x0.49 ** (1 - 1.25) (it did not fall), the sender's there by less than the level.
    rr = {c.what: c for c in res.checks if c.point == "balance-rr mtu=450 streams=20" and c.rule == "band"}
    level = next(c for c in res.checks if c.rule == "cpu_level")
    assert "x0.49" in level.new_text
    assert rr[RECV.title].level == pytest.approx(0.49 ** (1 - 1.25), rel=0.05)
    assert rr["sender iperf3 CPU (% of a core)"].level < 0.49 < rr[RECV.title].level
    # A CPU regression still fails there: the receiver's CPU doubled at most points, the sender's
    # tripled at any.
    def times(key, f, pid):
        return lambda r: r.update({key: r[key] * f}) if r["point_id"].startswith(pid) else None
    caught = [not compare(base, changed(fast, times("cpu_server_iperf3_pct", 2.0, f"p{i:03d}")), noise=nf,
                          speed=sr).ok for i in range(12)]
    assert sum(caught) >= 9, caught
    assert all(not compare(base, changed(fast, times("cpu_client_iperf3_pct", 3.0, f"p{i:03d}")), noise=nf,
                           speed=sr).ok for i in range(12))


def test_a_partial_repeat_takes_its_level_from_the_run_it_confirms(tmp_path, capsys):
    from linklab.report.compare import confirm, repeat_level, run_level
    from linklab.report.points import group
    base, nf, sr, fast, repeat = _faster()
    # Its own 4 points put the repeat at x0.80: they are the points whose CPU sat apart.
    assert run_level(group(base), repeat).factor == pytest.approx(0.80, abs=0.02)
    lv, note = repeat_level(base, fast, repeat)
    assert lv.factor == pytest.approx(0.49, abs=0.02) and "x1.01 against it at the 4 points" in note
    assert repeat_level(base, fast, fast) == (None, "")  # a whole repeat has its own level
    # fc30: the points repeated were host_disturbed in the first run, so there is nothing to chain
    # from; the repeat's own level, and the note says why.
    disturbed = changed(fast, lambda r: r.update(flags="host_disturbed") if r["point_id"] in {
        x["point_id"] for x in repeat.rows} else None)
    own, why = repeat_level(base, disturbed, repeat)
    assert own is None and "from its own 4 points" in why
    # fc29 without CPU in the speed response: the first run failed the receiver's CPU at 4 points
    # and the repeat, at its own x0.80, cleared them for the wrong reason; at x0.49 it repeats them.
    no_cpu = _without_cpu(sr)
    earlier = compare(base, fast, noise=nf, speed=no_cpu)
    assert confirm(compare(base, repeat, noise=nf, speed=no_cpu), earlier).ok
    chained = confirm(compare(base, repeat, noise=nf, speed=no_cpu, level=lv), earlier)
    assert {c.what for c in chained.failures} == {RECV.title} and len(chained.failures) == 4, render(chained)
    # A regression of the receiver's CPU at the repeated points, in both runs: confirmed.
    repeated = {r["point_id"] for r in repeat.rows}

    def recv(r):
        if r["point_id"] in repeated:
            r["cpu_server_iperf3_pct"] *= 2.0
    first, again = changed(fast, recv), changed(repeat, recv)
    first.path = tmp_path / "first"
    res = confirm(compare(base, again, noise=nf, speed=sr, level=repeat_level(base, first, again)[0]),
                  compare(base, first, noise=nf, speed=sr))
    assert {c.what for c in res.failures} == {RECV.title}, render(res)
    # The CLI says where the level came from.
    b, a, r = write(tmp_path, base, "b"), write(tmp_path, fast, "a"), write(tmp_path, repeat, "r")
    (b / SPEED_FILE).write_text(sr.path.read_text())
    (b / "noise.json").write_text((sr.path.parent / "noise.json").read_text())
    capsys.readouterr()
    assert main(["compare", str(b), str(r), "--confirms", str(a)]) == 0
    assert "CPU level x0.49: " in capsys.readouterr().out



def test_a_measured_throughput_response_replaces_the_general_allowance():
    # On the faster machine the general allowance gave every point 14 % more room upwards, and
    # 802.3ad's points are link-bound: +20 % at one of them (a shaper that stopped limiting) passed.
    base, nf, sr, fast, _ = _faster()

    def up(pid):
        return lambda r: r.update(throughput_bps=r["throughput_bps"] * 1.2) if r["point_id"].startswith(pid) else None
    for pid in ("p000", "p002", "p004"):  # 802.3ad MTU 450, 1500, 9200, one stream
        res = compare(base, changed(fast, up(pid)), noise=nf, speed=sr)
        assert THR.title in {c.what for c in res.failures}, render(res)
    # A point whose response nobody measured keeps the allowance: the same +20 % passes there.
    unmeasured = _without(sr, lambda m: m is THR)
    assert compare(base, changed(fast, up("p002")), noise=nf, speed=unmeasured).ok
