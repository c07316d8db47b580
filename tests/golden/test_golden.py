"""Golden tests: topology in -> resolved model out; bad file in -> exact error text out.

Regenerate after an intended change with:  LINKLAB_UPDATE_GOLDEN=1 make test-unit
(then read the diff: it is the review of what changed for users).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from linklab.errors import LinklabError
from linklab.model import Context, load_topology, resolve

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "topologies"
UPDATE = os.environ.get("LINKLAB_UPDATE_GOLDEN") == "1"

GOOD = sorted((ROOT / "topologies").glob("*.yaml")) + sorted((HERE / "good").glob("*.yaml"))
BAD = sorted((HERE / "bad").glob("*.yaml"))
# Resolution depends on where the lab runs (scale: auto); golden files pin one context.
VM_CONTEXT = Context(auto_scale=0.1, auto_scale_reason="software-emulated VM (TCG): veth ~700 Mbit/s")


def _compare(actual: str, expected_path: Path) -> None:
    if UPDATE or not expected_path.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {expected_path}; create it with LINKLAB_UPDATE_GOLDEN=1")
        expected_path.write_text(actual)
    assert actual == expected_path.read_text(), f"output differs from {expected_path}"


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.stem)
def test_good_topology_resolves_as_recorded(path: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    lab = resolve(load_topology(_rel(path)), VM_CONTEXT)
    out = yaml.safe_dump(lab.model_dump(mode="json"), sort_keys=False, width=120)
    _compare(out, HERE / "expected" / f"{path.parent.name}_{path.stem}.resolved.yaml")


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.stem)
def test_bad_topology_fails_with_recorded_message(path: Path, monkeypatch):
    monkeypatch.chdir(ROOT)
    with pytest.raises(LinklabError) as err:
        resolve(load_topology(_rel(path)), VM_CONTEXT)
    assert err.value.exit_code == 2
    _compare(err.value.render() + "\n", HERE / "expected" / f"bad_{path.stem}.error.txt")


CHECKS_BAD = sorted((Path(__file__).parent / "checks" / "bad").glob("*.yaml"))


@pytest.mark.parametrize("path", CHECKS_BAD, ids=lambda p: p.stem)
def test_bad_checks_file_fails_with_recorded_message(path: Path, monkeypatch):
    """A bad checks file (or a topology's bad checks: section): exit 2, every problem with its
    path and line, exactly as recorded; validated as `linklab check` and `linklab validate` do."""
    from linklab.validate import validate_file
    monkeypatch.chdir(ROOT)
    with pytest.raises(LinklabError) as err:
        validate_file(_rel(path))
    assert err.value.exit_code == 2
    _compare(err.value.render() + "\n", path.parent.parent / "expected" / f"bad_{path.stem}.error.txt")


@pytest.mark.parametrize("path", CHECKS_BAD, ids=lambda p: p.stem)
def test_check_refuses_a_bad_checks_file_with_no_lab_up(path: Path, monkeypatch, tmp_path, capsys):
    """`linklab check FILE` with no lab up: the file's problems (the recorded text, exit 2),
    not "no lab is up": the file is judged before any lab is looked for."""
    from linklab.cli import main
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))  # no lab recorded anywhere
    assert main(["check", _rel(path)]) == 2
    _compare(capsys.readouterr().err, path.parent.parent / "expected" / f"bad_{path.stem}.error.txt")


EXPERIMENTS_BAD = sorted((Path(__file__).parent / "experiments" / "bad").glob("*.yaml"))


@pytest.mark.parametrize("path", EXPERIMENTS_BAD, ids=lambda p: p.stem)
def test_bad_experiment_fails_with_recorded_message(path: Path, monkeypatch):
    from linklab.validate import load_experiment
    monkeypatch.chdir(ROOT)
    with pytest.raises(LinklabError) as err:
        load_experiment(_rel(path))
    assert err.value.exit_code == 2
    _compare(err.value.render() + "\n", path.parents[1] / "expected" / f"bad_{path.stem}.error.txt")
