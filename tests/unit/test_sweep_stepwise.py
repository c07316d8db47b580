"""The stepwise executor (linklab/sweep/stepwise.py): what `linklab ab` drives an arm's sweep with."""

import io
import json

from linklab.sweep import engine, measure_rep, stepwise
from linklab.sweep.matrix import Point
from tests.unit.test_sweep_phases import _Plan, _record, _sweep


def _serve(tmp_path, monkeypatch, commands, todo=None, settings=(), plan=_Plan):
    applied = []
    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: plan)
    monkeypatch.setattr(engine.lab, "set_params",
                        lambda name, overrides, **k: applied.append(list(overrides)) or _record())
    monkeypatch.setattr(measure_rep, "measure", lambda *a, **k: ({"iperf3.json": "{}"}, {"throughput_bps": 9e7}))
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])
    sweep = _sweep(tmp_path, monkeypatch)
    sweep.overrides = tuple(settings)
    points = [Point(index=0, id="p0", key="mtu=450", axes={"mtu": 450}),
              Point(index=1, id="p1", key="mtu=9000", axes={"mtu": 9000})]
    replies = io.StringIO()
    cmds = io.StringIO("".join(json.dumps(c) + "\n" for c in commands))
    ended = stepwise.serve(sweep, points, todo or {"p0": [1, 2], "p1": [1, 2]}, commands=cmds, replies=replies)
    sweep.recording.close()
    sweep.ended = ended  # what the end command asked (the caller acts on it once the sweep ends)
    return [json.loads(x) for x in replies.getvalue().splitlines()], sweep, applied


def test_hello_then_one_reply_per_command_and_only_what_was_asked_is_measured(tmp_path, monkeypatch):
    replies, sweep, _ = _serve(tmp_path, monkeypatch, [
        {"do": "prepare", "point": "p1"}, {"do": "measure", "point": "p1", "rep": 2},
        {"do": "measure", "point": "p1", "rep": 1}, {"do": "end"}, {"do": "measure", "point": "p0", "rep": 1}])
    hello = replies[0]["hello"]
    assert hello["protocol"] == stepwise.PROTOCOL and hello["run"] == str(sweep.store.path)
    assert [p["id"] for p in hello["points"]] == ["p0", "p1"] and hello["todo"]["p1"] == [1, 2]
    assert replies[1] == {"ok": True, "preflight_ok": True, "problems": []}
    assert replies[2]["ok"] and replies[2]["error"] is None and replies[3]["ok"]
    assert replies[4] == {"ok": True} and len(replies) == 5  # nothing read after "end"
    assert sweep.ended == {"do": "end"}  # no `down` asked: the lab stays up
    assert sorted((r["point_id"], r["rep"]) for r in sweep.store.rows()) == [("p1", 1), ("p1", 2)]


def test_bad_commands_are_answered_and_change_nothing(tmp_path, monkeypatch):
    replies, sweep, _ = _serve(tmp_path, monkeypatch, [
        {"do": "measure", "point": "p0", "rep": 1},          # not prepared
        {"do": "prepare", "point": "p9"},                    # no such point
        {"do": "jump"}, "not json",
        {"do": "prepare", "point": "p0"},
        {"do": "measure", "point": "p0", "rep": 3},          # not a repetition left
        {"do": "measure", "point": "p0", "rep": 1},
        {"do": "measure", "point": "p0", "rep": 1},          # asked twice
    ])
    answers = replies[1:]
    assert [a["ok"] for a in answers] == [False, False, False, False, True, False, True, False]
    assert "prepare it first" in answers[0]["error"] and "p0, p1" in answers[1]["error"]
    assert "not a repetition left" in answers[5]["error"] and "not a repetition left" in answers[7]["error"]
    assert [(r["point_id"], r["rep"]) for r in sweep.store.rows()] == [("p0", 1)]  # stdin's end ends it
    assert sweep.ended == {}  # no end command: nothing asked of the caller


def test_end_with_down_is_answered_first_and_handed_to_the_caller(tmp_path, monkeypatch):
    replies, sweep, _ = _serve(tmp_path, monkeypatch, [{"do": "end", "down": True}])
    assert replies[1:] == [{"ok": True}]
    assert sweep.ended == {"do": "end", "down": True}


def test_the_sweeps_own_settings_win_over_the_points(tmp_path, monkeypatch):
    class Mtu(_Plan):
        overrides = (("links[*].mtu", 450),)

    _, _, applied = _serve(tmp_path, monkeypatch, [{"do": "prepare", "point": "p0"}], plan=Mtu,
                           settings=[("links[*].mtu", 1500), ("links[*].impair.rate", "900mbit")])
    # applied in order: the point's MTU first, the sweep's own after it (the later one wins)
    assert applied == [[("links[*].mtu", 450), ("links[*].mtu", 1500), ("links[*].impair.rate", "900mbit")]]


def test_protocol_stream_keeps_stdout_for_the_protocol(tmp_path):
    import subprocess
    import sys
    code = ("from linklab.sweep import stepwise; import os, subprocess; out = stepwise.protocol_stream(); "
            "print('chatter'); subprocess.run(['echo', 'child']); out.write('{\"hello\": 1}\\n'); out.flush()")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout == '{"hello": 1}\n'
    assert "chatter" in res.stderr and "child" in res.stderr


def test_a_disturbed_repetition_is_measured_once_more_before_the_reply(tmp_path, monkeypatch):
    flags = iter(["host_disturbed", ""])
    monkeypatch.setattr(engine, "plan_point", lambda exp, topo, axes: _Plan)
    monkeypatch.setattr(engine.lab, "set_params", lambda *a, **k: _record())
    monkeypatch.setattr(measure_rep, "measure", lambda *a, **k: ({}, {"throughput_bps": 9e7, "flags": (f := next(flags)), "flag_evidence": f and "busy"}))
    monkeypatch.setattr(measure_rep, "probes_for", lambda *a, **k: [])
    sweep = _sweep(tmp_path, monkeypatch)
    sweep.rerun_disturbed = True
    replies = io.StringIO()
    cmds = io.StringIO('{"do": "prepare", "point": "p0"}\n{"do": "measure", "point": "p0", "rep": 1}\n')
    stepwise.serve(sweep, [Point(index=0, id="p0", key="k", axes={})], {"p0": [1]}, commands=cmds, replies=replies)
    sweep.recording.close()
    assert json.loads(replies.getvalue().splitlines()[-1]) == {"ok": True, "error": None, "flags": ""}
    kept = sorted(d.name for d in (sweep.store.points_dir / "p0").iterdir() if d.is_dir())
    assert kept == ["rep1", "rep1.disturbed-1"]
