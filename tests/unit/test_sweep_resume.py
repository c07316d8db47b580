"""Resuming a sweep: what identifies a run, and refusing to mix rows made under other conditions."""

from datetime import datetime

import pytest

from linklab.errors import StateError
from linklab.sweep import engine
from linklab.results.store import ResultsStore


def _parts(tmp_path, monkeypatch, scale=0.1, kind="vm", iperf="iperf3 3.12"):
    monkeypatch.setattr(engine, "_tool_versions", lambda: {"iperf3": iperf})
    exp, topo = tmp_path / "e.yaml", tmp_path / "t.yaml"
    exp.write_text("name: e\n")
    topo.write_text("name: t\n")
    st = {"resolved": {"scale": scale}, "placement": {"kind": kind}}
    return engine.fingerprint_parts(exp, topo, engine.Options(), [], st)


def test_fingerprint_covers_scale_placement_and_tool_versions(tmp_path, monkeypatch):
    base = _parts(tmp_path, monkeypatch)
    assert base["scale"] == 0.1 and base["placement"] == "vm" and base["tools"] == {"iperf3": "iperf3 3.12"}
    assert _parts(tmp_path, monkeypatch, scale=1.0) != base
    assert _parts(tmp_path, monkeypatch, kind="native") != base
    assert _parts(tmp_path, monkeypatch, iperf="iperf3 3.16") != base


def test_unfinished_run_made_at_another_scale_is_refused_with_what_differs(tmp_path, monkeypatch):
    then = _parts(tmp_path, monkeypatch, scale=0.1)
    run = ResultsStore.create(tmp_path / "results", "e", {"fingerprint": "x", "fingerprint_parts": then},
                              now=datetime(2024, 1, 1))
    now = _parts(tmp_path, monkeypatch, scale=1.0)
    with pytest.raises(StateError) as e:
        engine.refuse_mismatched_resume(run, now)
    text = e.value.render()
    assert str(run.path) in text and "scale: 0.1 then, 1.0 now" in text and "--force" in text
    assert e.value.exit_code == 3


def test_run_without_recorded_parts_is_refused_too(tmp_path, monkeypatch):
    run = ResultsStore.create(tmp_path, "e", {"fingerprint": "old"}, now=datetime(2024, 1, 1))
    with pytest.raises(StateError, match="predates"):
        engine.refuse_mismatched_resume(run, _parts(tmp_path, monkeypatch))


def test_tool_settings_are_their_own_columns():
    class Tool:
        duration, protocol, ip, streams, parallel, mss, length = 10, "tcp", 4, 4, "processes", None, None

    class Plan:
        tool, cc = Tool, "cubic"

    cols = engine.tool_columns(Plan)
    assert cols["parallel"] == "processes" and cols["streams"] == 4 and cols["cc"] == "cubic"


def test_sweep_help_documents_no_retry(capsys):
    from linklab.cli import main
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "--no-retry" in capsys.readouterr().out


def test_repetitions_asked_for_enter_the_fingerprint_only_when_given(tmp_path, monkeypatch):
    base = _parts(tmp_path, monkeypatch)
    assert "repetitions" not in base  # runs made before the option keep resuming
    exp, topo = tmp_path / "e.yaml", tmp_path / "t.yaml"
    five = engine.fingerprint_parts(exp, topo, engine.Options(repetitions=5), [], {"resolved": {"scale": 0.1},
                                                                                  "placement": {"kind": "vm"}})
    assert five["repetitions"] == 5 and {k: v for k, v in five.items() if k != "repetitions"} == base


def test_sweep_repetitions_out_of_range_is_bad_input(capsys):
    from linklab.cli import main
    assert main(["sweep", "experiments/e1_bonding_mtu.yaml", "--repetitions", "0"]) == 2
    assert "--repetitions 0" in capsys.readouterr().err
