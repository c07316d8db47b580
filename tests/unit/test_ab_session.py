"""The A/B driver (linklab/ab/session.py) against stand-in arms: real processes speaking the
stepwise protocol, so the order, the pipes and the failures are the driver's own."""

import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from linklab.ab import session
from linklab.ab.arms import Arm, ArmSpec
from linklab.sweep.stepwise import PROTOCOL

FAKE = textwrap.dedent('''
    import json, sys
    log, points, fail = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    def say(**m):
        print(json.dumps(m), flush=True)
    say(hello={"protocol": %d, "run": log + ".run", "pause": 0.0, "repetitions": 2,
               "points": [{"id": f"{p}-id", "key": p, "axes": {"x": p}} for p in points], "todo": {}})
    for line in sys.stdin:
        cmd = json.loads(line)
        with open(log, "a") as f:
            f.write(json.dumps(cmd) + "\\n")
        if cmd["do"] == "end":
            say(ok=True); break
        if fail and cmd.get("point", "").startswith(fail):
            sys.exit(3)
        say(ok=True, preflight_ok=True, problems=[], error=None, flags="")
''' % PROTOCOL)


@dataclass(frozen=True)
class FakeArm(Arm):
    points: tuple = ()
    fail_at: str = ""

    def sweep_argv(self, pairs, quick):
        return [sys.executable, "-c", FAKE, str(self.results) + ".cmds", json.dumps(list(self.points)), self.fail_at]

    def env(self):
        return {}


def _arm(tmp_path, name, points, fail_at=""):
    return FakeArm(ArmSpec(name), None, tmp_path, None, tmp_path / "e.yaml", f"lab_{name}", tmp_path / name,
                   points=tuple(points), fail_at=fail_at)


def _commands(arm):
    return [json.loads(x) for x in Path(str(arm.results) + ".cmds").read_text().splitlines()]


def _manifest(tmp_path):
    (tmp_path / session.AB_FILE).write_text(json.dumps({"arms": {}}))


def test_order_is_abba_and_mirrored_at_every_other_point():
    assert session.order(0, 2) == ["a", "b", "b", "a"]
    assert session.order(1, 2) == ["b", "a", "a", "b"]
    assert session.order(0, 3) == ["a", "b", "b", "a", "a", "b"]
    assert session.order(0, 1) == ["a", "b"] and session.order(1, 1) == ["b", "a"]
    for i in range(4):  # each arm measured `pairs` times at each point
        assert sorted(session.order(i, 3)) == ["a"] * 3 + ["b"] * 3


def test_points_matched_by_axes_and_measured_interleaved(tmp_path):
    _manifest(tmp_path)
    a = _arm(tmp_path, "a", ["p1", "p2", "only-a"])
    b = _arm(tmp_path, "b", ["p2", "p1", "only-b"])
    said = []
    manifest = session.drive([a, b], tmp_path, pairs=2, quick=True, say=said.append)
    assert manifest["complete"] and manifest["points"] == 2
    assert manifest["unmatched"] == {"a": ["only-a"], "b": ["only-b"]}
    assert manifest["runs"] == {"a": str(a.results) + ".cmds.run", "b": str(b.results) + ".cmds.run"}
    assert json.loads((tmp_path / session.AB_FILE).read_text())["complete"]
    ca, cb = _commands(a), _commands(b)
    assert [c["do"] for c in ca] == ["prepare", "measure", "measure", "prepare", "measure", "measure", "end"]
    assert [(c["point"], c["rep"]) for c in ca if c["do"] == "measure"] == [("p1-id", 1), ("p1-id", 2),
                                                                               ("p2-id", 1), ("p2-id", 2)]
    assert [(c["point"], c["rep"]) for c in cb if c["do"] == "measure"] == [("p1-id", 1), ("p1-id", 2),
                                                                               ("p2-id", 1), ("p2-id", 2)]
    # each arm takes its own lab down as it ends (no cold `linklab down` of the driver's)
    assert ca[-1] == cb[-1] == {"do": "end", "down": True}


def test_only_the_points_whose_axes_take_the_kept_values_are_prepared_and_measured(tmp_path):
    _manifest(tmp_path)
    a = _arm(tmp_path, "a", ["p1", "p2", "p3"])
    b = _arm(tmp_path, "b", ["p3", "p2", "p1"])
    manifest = session.drive([a, b], tmp_path, pairs=1, quick=True, say=lambda *_: None,
                             subset={"x": {"p1", "p3"}})
    assert manifest["complete"] and manifest["points"] == 2
    for arm in (a, b):
        assert [c.get("point") for c in _commands(arm) if c["do"] == "prepare"] == ["p1-id", "p3-id"]
    assert session.selected({"x": "p2", "y": 1}, {"y": {"1"}}) and not session.selected({"x": "p2"}, {"x": {"p1"}})
    assert session.selected({"mtu": 450, "streams": 20}, {"mtu": {"450", "9200"}, "streams": {"20"}})


def test_an_arm_that_dies_ends_the_run_with_its_last_words_and_stops_the_other(tmp_path):
    _manifest(tmp_path)
    a = _arm(tmp_path, "a", ["p1", "p2"])
    b = _arm(tmp_path, "b", ["p1", "p2"], fail_at="p2")
    with pytest.raises(session.ArmFailed, match="arm b's sweep exited 3"):
        session.drive([a, b], tmp_path, pairs=2, quick=True, say=lambda *_: None)
    manifest = json.loads((tmp_path / session.AB_FILE).read_text())
    assert not manifest.get("complete") and "wall_s" in manifest


def test_arms_with_no_point_in_common_are_refused(tmp_path):
    _manifest(tmp_path)
    with pytest.raises(Exception, match="no point in common"):
        session.drive([_arm(tmp_path, "a", ["p1"]), _arm(tmp_path, "b", ["p2"])], tmp_path, pairs=1, quick=True,
                      say=lambda *_: None)


def test_keep_labs_asks_no_arm_to_take_its_lab_down(tmp_path):
    _manifest(tmp_path)
    a, b = _arm(tmp_path, "a", ["p1"]), _arm(tmp_path, "b", ["p1"])
    assert session.drive([a, b], tmp_path, pairs=1, quick=True, say=lambda *_: None, keep_labs=True)["complete"]
    assert _commands(a)[-1] == _commands(b)[-1] == {"do": "end", "down": False}
