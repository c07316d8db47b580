"""The `linklab ab` command of examples/ci/'s recipes, as an argv: the unit test checks both
recipes give the same one and that linklab's parser takes it; the kernel-tier test
(tests/integration/kernel/test_command_tool.py) runs it. One command, so CI runs what was tested."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
GITHUB = ROOT / "examples/ci/github-linklab-ab.yml"
GITLAB = ROOT / "examples/ci/gitlab-linklab-ab.yml"
# What each recipe calls the revision a pull request is gated against.
BASE = {GITHUB: "origin/${{ github.base_ref }}", GITLAB: "origin/$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"}


def load(path: Path) -> dict:
    """A recipe as data; `on:` kept a key (PyYAML reads it as YAML 1.1's true, GitHub as a name)."""
    doc = yaml.safe_load(path.read_text())
    if True in doc:
        doc["on"] = doc.pop(True)
    return doc


def command(path: Path) -> str:
    """The recipe's `linklab ab` command line, as written."""
    doc = load(path)
    if path == GITHUB:
        lines = [s.get("run", "") for job in doc["jobs"].values() for s in job["steps"]]
    else:
        lines = [line for job in doc.values() if isinstance(job, dict) for line in job.get("script", [])]
    (line,) = [x for x in lines if "linklab ab" in x]
    return line


def ab_argv(path: Path, experiment: str, base: str, junit: str, results: str) -> list[str]:
    """The recipe's `linklab ab` argv (after `linklab`), its variables given these values."""
    text = command(path).replace(BASE[path], base)
    values = {"EXPERIMENT": experiment, "JUNIT": junit, "RESULTS": results}
    argv = shlex.split(text)
    argv = argv[argv.index("linklab") + 1:]
    return [re.sub(r"\$(\w+)", lambda m: values[m[1]], a) for a in argv]
