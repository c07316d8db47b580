"""What an A/B arm is made of (linklab/ab/arms.py): revisions unpacked from git, once, and the
command each arm's sweep runs with."""

import subprocess
from pathlib import Path
import sys

import pytest

from linklab.ab import arms
from linklab.errors import UsageError


def _git(repo, *argv):
    subprocess.run(["git", "-C", str(repo), *argv], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@x", "HOME": str(repo), "PATH": "/usr/bin:/bin"})


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A user's experiment repository with two commits; the state directory beside it."""
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    r = tmp_path / "repo"
    (r / "exp").mkdir(parents=True)
    _git(r, "init", "-q")
    (r / "exp" / "e.yaml").write_text("name: e\n# one\n")
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "one")
    (r / "exp" / "e.yaml").write_text("name: e\n# two\n")
    (r / "linklab" / "sweep").mkdir(parents=True)
    (r / "linklab" / "__init__.py").write_text("")  # the second revision is a linklab checkout
    (r / "linklab" / "sweep" / "stepwise.py").write_text("")  # that can run an arm
    _git(r, "add", ".")
    _git(r, "commit", "-q", "-m", "two")
    return r


def test_a_revision_is_unpacked_once_and_its_experiment_and_code_are_its_own(repo, tmp_path):
    specs = [arms.ArmSpec("a", "HEAD~1"), arms.ArmSpec("b", None, ("links[*].mtu=9000",))]
    a, b = arms.prepare(specs, repo / "exp" / "e.yaml", "bond2", tmp_path / "run")
    assert a.commit and len(a.commit) == 40 and a.source == tmp_path / "state" / "ab" / "src" / a.commit
    assert a.experiment.read_text() == "name: e\n# one\n"  # the revision's own file, not the working tree's
    assert a.code is None  # that revision holds no linklab/: this linklab runs its files
    assert b.commit is None and b.experiment == (repo / "exp" / "e.yaml").resolve() and b.code is None
    assert b.source == Path.cwd()
    assert (a.lab, b.lab) == ("bond2_a", "bond2_b")
    assert a.results == tmp_path / "run" / "a"
    stamp = (a.source / "exp" / "e.yaml").stat().st_mtime_ns
    again = arms.prepare(specs, repo / "exp" / "e.yaml", "bond2", tmp_path / "run")[0]
    assert again.source == a.source and (a.source / "exp" / "e.yaml").stat().st_mtime_ns == stamp
    head = arms.prepare([arms.ArmSpec("a", "HEAD")], repo / "exp" / "e.yaml", "bond2", tmp_path / "run")[0]
    assert head.code == head.source  # a linklab checkout's revision runs its own code
    assert head.env()["PYTHONPATH"].split(":")[0] == str(head.source)


def test_the_arm_sweep_command_carries_its_settings_and_repetitions(repo, tmp_path):
    b = arms.prepare([arms.ArmSpec("b", None, ("links[*].mtu=9000", "links[0].impair.delay=2ms"))],
                     repo / "exp" / "e.yaml", "a_long_lab_name", tmp_path / "run")[0]
    argv = b.sweep_argv(pairs=3, quick=True)
    assert argv[:4] == [sys.executable, "-m", "linklab", "sweep"] and "--stepwise" in argv
    assert argv[argv.index("--repetitions") + 1] == "3" and "--quick" in argv
    assert argv[argv.index("--lab") + 1] == "a_long_lab_b" == b.lab  # 12 characters at most
    sets = [argv[i + 1] for i, x in enumerate(argv) if x == "--set"]
    assert sets == ["links[*].mtu=9000", "links[0].impair.delay=2ms"]
    assert b.env()["LINKLAB_STATE_DIR"] == str(tmp_path / "state")


def test_unknown_revisions_and_missing_experiments_are_bad_input(repo, tmp_path):
    with pytest.raises(UsageError, match="unknown revision 'nope'"):
        arms.prepare([arms.ArmSpec("a", "nope")], repo / "exp" / "e.yaml", "x", tmp_path / "run")
    (repo / "exp" / "new.yaml").write_text("name: n\n")
    with pytest.raises(UsageError, match="has no exp/new.yaml"):
        arms.prepare([arms.ArmSpec("a", "HEAD")], repo / "exp" / "new.yaml", "x", tmp_path / "run")
    outside = tmp_path / "loose" / "e.yaml"
    outside.parent.mkdir()
    outside.write_text("name: e\n")
    with pytest.raises(UsageError, match="not in a git checkout"):
        arms.prepare([arms.ArmSpec("a", "HEAD")], outside, "x", tmp_path / "run")


def test_a_linklab_revision_from_before_stepwise_sweeps_is_refused_before_anything_runs(repo, tmp_path):
    (repo / "linklab" / "sweep" / "stepwise.py").unlink()
    _git(repo, "commit", "-q", "-am", "three: no stepwise sweeps")
    with pytest.raises(UsageError, match="predates `linklab ab`"):
        arms.prepare([arms.ArmSpec("a", "HEAD")], repo / "exp" / "e.yaml", "x", tmp_path / "run")
