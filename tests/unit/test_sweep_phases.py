"""Per-phase timing of sweep repetitions (linklab/sweep/phases.py) and the overhead sum."""

import io
import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from linklab.handle import LabHandle
from linklab.measure import traffic
from linklab.results.store import ResultsStore
from linklab.sweep import engine, measure_rep, phases, preflight
from linklab.sweep.matrix import Point
from linklab.sweep.phases import PhaseClock
from linklab.sweep.progress import Progress

DATA = Path(__file__).resolve().parents[2] / "tests/integration/data"


def test_clock_accumulates_repeated_phases_in_first_run_order():
    c = PhaseClock()
    with c.phase("b"):
        time.sleep(0.02)
    c.add("a", 0.5)
    with c.phase("b"):
        time.sleep(0.02)
    assert list(c.seconds) == ["b", "a"]
    assert 0.04 <= c.seconds["b"] < 0.5
    assert c.row()["phase_a_s"] == 0.5
    assert json.loads(c.raw())["total_s"] == pytest.approx(c.total(), abs=1e-3)


def test_clock_records_a_phase_that_raised():
    c = PhaseClock()
    with pytest.raises(RuntimeError), c.phase("boom"):
        raise RuntimeError("x")
    assert "boom" in c.seconds


def test_from_row_reads_back_only_phase_columns_that_ran():
    row = {"phase_window_s": 6.2, "phase_pause_s": "", "window_s": 6.2, "phase_x": 1}
    assert phases.from_row(row) == {"window": 6.2}


def test_breakdown_counts_only_what_goes_beyond_the_experiments_waits():
    rows = [{"point_id": "p1", "phase_reconfigure_s": 2.0, "phase_settle_s": 1.01, "phase_window_s": 6.5,
             "phase_counters_s": 0.3},
            {"point_id": "p1", "phase_pause_s": 1.0, "phase_window_s": 6.1, "phase_counters_s": 0.3},
            {"point_id": "p2", "error": "pre-flight failed"}]  # not measured: no phases, not counted
    b = phases.breakdown(rows, window_asked_s=6.0, settle_s=1.0, pause_s=1.0, outside={"record": 0.4})
    assert b["repetitions"] == 2 and b["points"] == 1
    assert b["asked"] == {"settle": 1.0, "window": 12.0, "pause": 1.0}
    assert b["overhead"]["reconfigure"] == pytest.approx(2.0)
    assert b["overhead"]["window"] == pytest.approx(0.6)
    assert b["overhead"]["settle"] == pytest.approx(0.01)
    assert b["overhead"]["record"] == pytest.approx(0.4)
    assert b["overhead_s"] == pytest.approx(2.0 + 0.01 + 0.6 + 0.6 + 0.4)
    assert b["overhead_per_rep_s"] == pytest.approx(b["overhead_s"] / 2)
    # Split: window excess, counters and recording every rep; reconfigure and settle once per point.
    assert b["paid_per_rep_s"] == pytest.approx((0.6 + 0.6 + 0.4) / 2)
    assert b["paid_per_point_s"] == pytest.approx(2.0 + 0.01)
    assert b["paid_per_sweep_s"] == 0


def test_a_settle_whose_checks_took_no_measurable_time_is_no_overhead():
    rows = [{"point_id": "p1", "phase_preflight_s": 0.0, "phase_qdisc_dump_s": 0.0, "phase_settle_s": 0.0,
             "phase_window_s": 6.0}]
    b = phases.breakdown(rows, window_asked_s=6.0, settle_s=0.0, pause_s=0)
    assert b["overhead"] == {"preflight": 0.0, "qdisc_dump": 0.0, "settle": 0.0, "window": 0.0}


def test_a_phase_shorter_than_asked_is_no_negative_overhead():
    rows = [{"point_id": "p1", "phase_window_s": 5.0}]
    b = phases.breakdown(rows, window_asked_s=6.0, settle_s=0, pause_s=0)
    assert b["overhead"]["window"] == 0.0


class _Plan:
    client, server, mtu_varied, cc, overrides, events = "h1", "h2", False, None, (), ()

    class tool:  # noqa: N801 -- stands in for the experiment's tool settings
        duration, protocol, ip, streams, parallel, mss, length, port = 5.0, "tcp", 4, 1, "threads", None, None, 5201
        interval, udp_rate, ping_count, ping_interval = None, "1gbit", 3, 0.2


class _Exp:
    settle, pause, warmup, measure, events, repetitions, counted_links = 0.05, 0.05, 1.0, ["throughput"], (), 2, ()


def _record():
    from linklab.model import Context, load_topology, resolve
    lab = resolve(load_topology(Path(__file__).resolve().parents[2] / "tests/integration/data/one_link.yaml"), Context())
    return {"lab": lab.name, "backend": "linux", "resolved": lab.model_dump(mode="json"),
            "netns": {n.name: f"ns-{n.name}" for n in lab.nodes}, "topology": {"path": "t.yaml", "overrides": []}}


def _sweep(tmp_path, monkeypatch, exp=None, record=None):
    """A sweep over a lab that is only a state record: nothing reaches a kernel."""
    record = record or _record()
    monkeypatch.setattr(preflight, "run", lambda *a, **k: preflight.Preflight())
    monkeypatch.setattr(engine, "_qdisc_dumps", lambda handle: "")
    monkeypatch.setattr(engine.ServerPool, "get", lambda self, *a: None)
    store = ResultsStore.create(tmp_path, "e", {"fingerprint": "f"})
    return engine.Sweep(exp or _Exp, {}, LabHandle.from_record(record, backend=object()), [], store,
                        Progress(3, stream=io.StringIO()), print)


def test_run_point_charges_one_off_phases_to_the_first_rep_and_pause_to_the_next(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: _Plan)
    monkeypatch.setattr(engine.lab, "set_params", lambda *a, **k: _record())

    def fake_measure(rep, traffic, probes, clock=None):
        assert rep.client == "h1" and rep.client_ns == "ns-h1" and rep.target == "h2"
        with clock.phase("window"):
            time.sleep(0.01)
        return {"iperf3.json": "{}"}, {"window_s": 0.01}

    monkeypatch.setattr(measure_rep, "measure", fake_measure)
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])
    sweep = _sweep(tmp_path, monkeypatch)
    point = Point(index=0, id="p0", key="k", axes={})
    engine._run_point(sweep, point, [1, 2])
    sweep.recording.close()  # the last repetition is written behind the next point's waits
    first, second = sweep.store.rows()
    assert {"phase_reconfigure_s", "phase_settle_s", "phase_preflight_s", "phase_server_start_s",
            "phase_window_s"} <= set(first)
    assert "phase_pause_s" not in first
    assert "phase_pause_s" in second and "phase_reconfigure_s" not in second
    assert second["phase_pause_s"] >= 0.05
    timings = json.loads((sweep.store.rep_dir("p0", 1) / "timings.json").read_text())
    assert timings["seconds"]["window"] == first["phase_window_s"]
    assert sweep.totals.seconds["record"] > 0


def _flagged(monkeypatch, flags_per_call):
    """measure() returns rows flagged as `flags_per_call` says, in order."""
    calls = iter(flags_per_call)

    def fake_measure(rep, traffic, probes, clock=None):
        flags = next(calls)
        return {"iperf3.json": "{}"}, {"throughput_bps": 1e6, "flags": flags, "flag_evidence": flags and "busy"}

    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: _Plan)
    monkeypatch.setattr(engine.lab, "set_params", lambda *a, **k: _record())
    monkeypatch.setattr(measure_rep, "measure", fake_measure)
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])


def test_a_disturbed_repetition_is_measured_once_more_and_the_first_attempt_kept(tmp_path, monkeypatch):
    # rep 1: disturbed, then quiet; rep 2: quiet; rep 3: disturbed twice (kept as it is, flagged).
    _flagged(monkeypatch, ["host_disturbed", "", "queue_dropped", "core_saturated;host_disturbed", "host_disturbed"])
    sweep = _sweep(tmp_path, monkeypatch)
    log = io.StringIO()
    sweep.progress, sweep.rerun_disturbed = Progress(3, stream=log), True
    engine._run_point(sweep, Point(index=0, id="p0", key="k", axes={}), [1, 2, 3])
    sweep.recording.close()
    store = sweep.store
    rows = {r["rep"]: r for r in store.rows()}
    assert [rows[k]["flags"] for k in (1, 2, 3)] == ["", "queue_dropped", "host_disturbed"]
    assert rows[1]["disturbed_attempts"] == 1 and "disturbed_attempts" not in rows[2]
    assert rows[3]["disturbed_attempts"] == 1
    kept = sorted(d.name for d in (store.points_dir / "p0").iterdir() if d.is_dir())
    assert kept == ["rep1", "rep1.disturbed-1", "rep2", "rep3", "rep3.disturbed-1"]
    first = json.loads((store.points_dir / "p0" / "rep3.disturbed-1" / "row.json").read_text())
    assert first["flags"] == "core_saturated;host_disturbed"
    assert log.getvalue().count("measuring rep") == 2


def test_without_the_option_a_disturbed_repetition_stays(tmp_path, monkeypatch):
    _flagged(monkeypatch, ["host_disturbed", "host_disturbed"])
    sweep = _sweep(tmp_path, monkeypatch)
    engine._run_point(sweep, Point(index=0, id="p0", key="k", axes={}), [1, 2])
    sweep.recording.close()
    assert [r["flags"] for r in sweep.store.rows()] == ["host_disturbed", "host_disturbed"]


def test_a_repetition_is_written_in_the_background_and_never_beside_a_measurement(tmp_path, monkeypatch):
    _flagged(monkeypatch, ["", "", "", ""])
    events = []
    measure = measure_rep.measure
    monkeypatch.setattr(measure_rep, "measure", lambda *a, **k: (events.append("measure"), measure(*a, **k))[1])
    sweep = _sweep(tmp_path, monkeypatch)
    write = sweep.store.record

    def slow_write(*a, **k):
        events.append("write " + threading.current_thread().name.split("_")[0])
        time.sleep(0.1)  # longer than the pause: the next repetition must wait for it
        write(*a, **k)
        events.append("written")

    monkeypatch.setattr(sweep.store, "record", slow_write)
    engine._run_point(sweep, Point(index=0, id="p0", key="k", axes={}), [1, 2])
    engine._run_point(sweep, Point(index=1, id="p1", key="k1", axes={}), [1, 2])
    assert events[-1] != "written"  # the last one is still being written
    sweep.recording.close()
    assert events == ["measure", "write linklab-record", "written"] * 4
    assert len(sweep.store.rows()) == 4 and sweep.recording.background_s >= 0.4


def test_a_write_that_fails_stops_the_sweep_where_it_waits(tmp_path, monkeypatch):
    _flagged(monkeypatch, ["", ""])
    sweep = _sweep(tmp_path, monkeypatch)

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sweep.store, "record", full_disk)
    with pytest.raises(OSError, match="No space"):
        engine._run_point(sweep, Point(index=0, id="p0", key="k", axes={}), [1, 2])
    sweep.recording.close()  # nothing pending after the failure


class _Proc:
    def __init__(self):
        self.alive = True

    def poll(self):
        return None if self.alive else 0


def test_server_pool_keeps_servers_up_across_points_that_want_the_same_ones(monkeypatch):
    started = []

    def fake_start(handle, server, client, port, count, interval=None):
        s = traffic.Servers([_Proc()], [port])
        started.append(s)
        return s

    stopped = []
    monkeypatch.setattr(traffic, "start_servers", fake_start)
    monkeypatch.setattr(traffic.Servers, "stop", lambda self: stopped.append(self))
    sysctls = {"h2": {}, "h3": {}}
    lab = SimpleNamespace(node=lambda name: SimpleNamespace(sysctls=dict(sysctls[name])))
    handle = SimpleNamespace(name="t", lab=lab)
    pool = traffic.ServerPool()
    first = pool.get(handle, "h2", "h1", 5201, 1)
    assert pool.get(handle, "h2", "h1", 5201, 1) is first and len(started) == 1  # same servers wanted: reused
    first.procs[0].alive = False  # a server died: started again
    second = pool.get(handle, "h2", "h1", 5201, 1)
    assert second is not first and stopped == [first]
    assert pool.get(handle, "h3", "h1", 5201, 1) is not second and stopped == [first, second]  # another node
    third = pool.servers
    # a point with events wants servers reporting every 0.1 s: started again with it
    assert pool.get(handle, "h3", "h1", 5201, 1, 0.1) is not third and stopped == [first, second, third]
    fourth = pool.servers
    assert pool.get(handle, "h3", "h1", 5201, 1, 0.1) is fourth
    # the server node's tcp_rmem changed (a sysctl profile): its listener would hand the old
    # default buffer to every connection it accepts, so the servers start again
    sysctls["h3"]["net.ipv4.tcp_rmem"] = "4096 65536 65536"
    assert pool.get(handle, "h3", "h1", 5201, 1, 0.1) is not fourth and stopped[-1] is fourth
    pool.stop()
    assert len(stopped) == 5 and pool.servers is None


def test_a_point_that_changes_only_tool_settings_does_not_reconfigure_the_lab(tmp_path, monkeypatch):
    applied_sets = []
    monkeypatch.setattr(engine.lab, "set_params",
                        lambda name, overrides, **k: applied_sets.append(list(overrides)) or _record())
    monkeypatch.setattr(measure_rep, "measure", lambda *a, **k: ({}, {}))
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])

    class Mtu1500(_Plan):
        overrides = (("links[*].mtu", 1500),)

    class Mtu9000(_Plan):
        overrides = (("links[*].mtu", 9000),)

    plans = {"a": Mtu1500, "b": Mtu1500, "c": Mtu9000}
    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: plans[axes["p"]])
    sweep = _sweep(tmp_path, monkeypatch)
    for i, p in enumerate("abc"):
        engine._run_point(sweep, Point(index=i, id=f"p{i}", key=p, axes={"p": p}), [1])
    sweep.recording.close()
    assert applied_sets == [[("links[*].mtu", 1500)], [("links[*].mtu", 9000)]]
    rows = sweep.store.rows()
    assert [("phase_reconfigure_s" in r) for r in rows] == [True, True, True]  # timed even when it was a no-op


def test_reports_do_not_list_the_sweeps_own_timings_as_measurements():
    from linklab.report.columns import other_columns
    rows = [{"phase_window_s": 6.1, "phase_record_s": 0.2, "client_nstat_TcpExtTCPSackRecv": 3}]
    assert other_columns(rows, []) == ["client_nstat_TcpExtTCPSackRecv"]


def _record_with(overrides):
    """The state record of one_link.yaml's lab with `overrides`, as `linklab set` leaves it."""
    from linklab.lab import build_lab
    record = _record()
    record["resolved"] = build_lab(DATA / "one_link.yaml", list(overrides)).model_dump(mode="json")
    return record


def test_a_point_that_leaves_the_lab_as_it_was_does_not_prove_the_path_again(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(engine.lab, "set_params", lambda name, overrides, **k: _record_with(overrides))
    monkeypatch.setattr(measure_rep, "measure", lambda *a, **k: ({}, {}))
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])

    class Mtu1500(_Plan):
        overrides = (("links[*].mtu", 1500),)

    class Mtu9000(_Plan):
        overrides = (("links[*].mtu", 9000),)

    plans = {"a": Mtu1500, "b": Mtu1500, "c": Mtu9000, "d": Mtu9000}
    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: plans[axes["p"]])
    sweep = _sweep(tmp_path, monkeypatch)
    ok = {"a": True, "b": True, "c": False, "d": True}  # c's pre-flight fails: d proves its path again

    def fake_run(handle, client, server, ip, path_proved=False):
        asked.append(path_proved)
        pf = preflight.Preflight()
        if not ok[current[0]]:
            pf.fail("bond down")
        return pf

    current = [None]
    monkeypatch.setattr(preflight, "run", fake_run)
    for i, p in enumerate("abcd"):
        current[0] = p
        engine.prepare_point(sweep, Point(index=i, id=f"p{i}", key=p, axes={"p": p}))
    assert asked == [False, True, False, False]


def test_a_proved_path_is_not_pinged_again_but_the_bonds_are_read(monkeypatch):
    from linklab.handle import LabHandle
    handle = LabHandle.from_record(_record(), backend=object())
    monkeypatch.setattr(preflight, "Ping", lambda **k: pytest.fail("pinged a path already proved"))
    read = []
    monkeypatch.setattr(preflight, "bond_problems", lambda h: read.append(h) or ([], []))
    pf = preflight.run(handle, "h1", "h2", 4, path_proved=True)
    assert pf.ok and pf.df_fits == preflight.PROVED and pf.path_mtu == 1500 and read == [handle]


def test_only_what_the_pings_depend_on_decides_whether_the_path_is_proved_again():
    from linklab.lab import build_lab

    def sig(*overrides, client="h1", ip=4):
        return preflight.path_signature(build_lab(DATA / "one_link.yaml", list(overrides)), client, "h2", ip)

    base = sig()
    # Queues, impairments and sysctls change no MTU, interface or forwarding: the same path.
    assert sig(("links[0].impair.rate", "50mbit"), ("links[0].impair.delay", "5ms")) == base
    assert sig(('hosts.h1.sysctls."net.ipv4.tcp_congestion_control"', "reno")) == base
    # An MTU, another client or another IP version is another path to prove.
    assert sig(("links[*].mtu", 9000)) != base
    assert sig(client="h2") != base
    assert sig(ip=6) != base


def test_the_checks_run_inside_the_settle_not_after_it(tmp_path, monkeypatch):
    # Pre-flight and the qdisc dump take 0.12 s of a 0.2 s settle: the point is ready ~0.2 s
    # after its reconfiguration (the settle sleeps only what is left), not 0.32 s.
    class Exp(_Exp):
        settle = 0.2

    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: _Plan)
    monkeypatch.setattr(engine.lab, "set_params", lambda *a, **k: _record())
    sweep = _sweep(tmp_path, monkeypatch, exp=Exp)
    monkeypatch.setattr(preflight, "run", lambda *a, **k: time.sleep(0.08) or preflight.Preflight())
    monkeypatch.setattr(engine, "_qdisc_dumps", lambda handle: time.sleep(0.04) or "")
    t0 = time.monotonic()
    prep = engine.prepare_point(sweep, Point(index=0, id="p0", key="k", axes={}))
    took = time.monotonic() - t0
    s = prep.clock.seconds
    assert 0.2 <= took < 0.28, took
    assert s["preflight"] >= 0.08 and s["qdisc_dump"] >= 0.04 and 0.06 <= s["settle"] <= 0.1, s
    rows = [{"point_id": "p0", **prep.clock.row()}]
    b = phases.breakdown(rows, window_asked_s=0, settle_s=0.2, pause_s=0)
    assert sum(b["overhead"][n] for n in phases.IN_SETTLE) < 0.03, b["overhead"]
