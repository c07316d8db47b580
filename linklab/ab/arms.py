"""An A/B arm: a revision of the checkout (or its working tree as it is) and lab settings on top,
made into a command that runs the experiment's sweep stepwise with that code and those files.

A revision is unpacked from git (`git archive`, nothing in the repository changes) into
STATE_DIR/ab/src/<commit>, once per commit. When the unpacked tree holds linklab's own package
(the arms are two revisions of linklab), the arm's sweep runs that code (PYTHONPATH); otherwise
(a user's experiment repository) it runs this linklab over that revision's experiment and
topology files. Both arms use this checkout's virtualenv and state directory, each with a lab of
its own (`<lab>_a`, `<lab>_b`), so that both stay up side by side in one lab VM.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from linklab import fsutil, runner, state
from linklab.errors import CommandFailed, UsageError

NAMES = ("a", "b")
SOURCES = "ab/src"  # under the state directory: revisions unpacked, one directory per commit


@dataclass(frozen=True)
class ArmSpec:
    """What the user asked an arm to be."""

    name: str                     # "a" or "b"
    rev: str | None = None        # a git revision; None: the working tree as it is
    overrides: tuple[str, ...] = ()  # PATH=VALUE, as `linklab set` takes them

    def words(self) -> str:
        what = f"revision {self.rev}" if self.rev else "the working tree"
        return what + (f" with {', '.join(self.overrides)}" if self.overrides else "")


@dataclass(frozen=True)
class Arm:
    """An arm ready to run: where its files and code are, its lab and its results."""

    spec: ArmSpec
    commit: str | None            # the revision's commit; None: the working tree
    source: Path                  # where its sweep runs: the revision's tree, or here (the working tree)
    code: Path | None             # the tree whose linklab/ runs it; None: this linklab
    experiment: Path
    lab: str
    results: Path

    @property
    def name(self) -> str:
        return self.spec.name

    def env(self) -> dict[str, str]:
        env = {"LINKLAB_STATE_DIR": str(state.state_dir().resolve()), "PYTHONUNBUFFERED": "1"}
        if self.code is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(self.code), *filter(None, [os.environ.get("PYTHONPATH")])])
        return env

    def sweep_argv(self, pairs: int, quick: bool) -> list[str]:
        argv = [sys.executable, "-m", "linklab", "sweep", str(self.experiment), "--stepwise", "--force",
                "--lab", self.lab, "--results", str(self.results), "--repetitions", str(pairs)]
        argv += ["--quick"] if quick else []
        for o in self.spec.overrides:
            argv += ["--set", o]
        return argv

    def down_argv(self) -> list[str]:
        return [sys.executable, "-m", "linklab", "down", self.lab]

    def describe(self) -> dict[str, object]:
        return {"rev": self.spec.rev, "commit": self.commit, "overrides": list(self.spec.overrides),
                "source": str(self.source), "code": str(self.code) if self.code else None,
                "experiment": str(self.experiment), "lab": self.lab, "words": self.spec.words()}


def repository(path: Path) -> Path:
    """The root of the git checkout holding `path`."""
    try:
        out = runner.run(["git", "-C", str(path if path.is_dir() else path.parent), "rev-parse", "--show-toplevel"],
                         timeout=30).stdout.strip()
    except CommandFailed as e:
        raise UsageError(f"{path} is not in a git checkout: --a-rev/--b-rev name revisions of one ({e.stderr.strip()})")
    return Path(out)


def commit_of(repo: Path, rev: str) -> str:
    res = runner.run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                     check=False, timeout=30)
    if not res.ok:
        raise UsageError(f"unknown revision {rev!r} in {repo}",
                         hint="give a commit, branch or tag of that checkout (`git log --oneline` lists commits)")
    return res.stdout.strip()


def unpack(repo: Path, commit: str, dest_root: Path) -> Path:
    """The tree of `commit`, unpacked once into dest_root/<commit> (whole or not at all)."""
    dest = dest_root / commit
    if dest.is_dir():
        return dest
    dest_root.mkdir(parents=True, exist_ok=True)
    tmp = fsutil.tmp_name(dest)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    archive = tmp / "tree.tar"
    try:
        runner.run(["git", "-C", str(repo), "archive", "--format=tar", "-o", str(archive), commit], timeout=120)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp / "tree", filter="data")
        os.rename(tmp / "tree", dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def lab_name(base: str, arm: str) -> str:
    """The arm's own lab: the topology's lab name (cut to fit linklab's 12 characters) + _a/_b."""
    return f"{base[:10]}_{arm}"


def prepare(specs: list[ArmSpec], experiment: Path, base_lab: str, run_dir: Path) -> list[Arm]:
    """Each arm made runnable: revisions unpacked, the experiment found in each arm's tree."""
    experiment, run_dir = experiment.resolve(), run_dir.resolve()
    repo = relative = None
    arms = []
    for spec in specs:
        if spec.rev is None:
            commit, source, code, exp = None, Path.cwd(), None, experiment
        else:
            if repo is None:
                repo = repository(experiment)
                relative = experiment.relative_to(repo)
            commit = commit_of(repo, spec.rev)
            source = unpack(repo, commit, state.state_dir().resolve() / SOURCES)
            exp = source / relative
            if not exp.is_file():
                raise UsageError(f"revision {spec.rev} ({commit[:12]}) has no {relative}",
                                 hint="both arms run the same experiment file, as each revision has it")
            code = source if (source / "linklab" / "__init__.py").is_file() else None
            if code is not None and not (code / "linklab" / "sweep" / "stepwise.py").is_file():
                raise UsageError(f"revision {spec.rev} ({commit[:12]}) of linklab predates `linklab ab`: its sweeps "
                                 "cannot be driven step by step",
                                 hint="give a revision made since linklab/sweep/stepwise.py exists (git log -- "
                                      "linklab/sweep/stepwise.py names the first)")
        arms.append(Arm(spec, commit, source, code, exp, lab_name(base_lab, spec.name), run_dir / spec.name))
    return arms
