"""examples/ci/: the GitHub Actions workflow and the GitLab CI job are valid by their platforms'
JSON Schemas (the copies check-jsonschema 0.39.0 ships, tests/data/ci/README.md; scripts/check-ci.sh
runs check-jsonschema itself), and both run the one `linklab ab` command the kernel tier runs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from linklab.cli import _parser
from tests.ci_recipe import GITHUB, GITLAB, ab_argv, load

DATA = Path(__file__).resolve().parents[1] / "data/ci"
SCHEMAS = {GITHUB: DATA / "github-workflows.json", GITLAB: DATA / "gitlab-ci.json"}


def _errors(path: Path, doc: dict) -> list[str]:
    schema = json.loads(SCHEMAS[path].read_text())
    return [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_the_recipe_is_valid_by_its_platforms_schema(path):
    assert _errors(path, load(path)) == []


def test_the_schemas_refuse_a_broken_recipe():
    gh = copy.deepcopy(load(GITHUB))
    gh["jobs"]["ab"]["run-on"] = gh["jobs"]["ab"].pop("runs-on")
    assert _errors(GITHUB, gh)
    gl = copy.deepcopy(load(GITLAB))
    gl["linklab-ab"]["artifacts"]["when"] = "sometimes"
    assert any("'sometimes' is not one of" in e for e in _errors(GITLAB, gl))


def test_both_recipes_run_one_linklab_ab_command_that_linklab_takes():
    args = dict(experiment="examples/own-app/experiment.yaml", base="origin/main", junit="j.xml", results="res")
    gh, gl = ab_argv(GITHUB, **args), ab_argv(GITLAB, **args)
    assert gh == gl == ["ab", "examples/own-app/experiment.yaml", "--quick", "--pairs", "5", "--a-rev", "origin/main",
                        "--junit", "j.xml", "--results", "res"]
    parsed = _parser().parse_args(gh)
    assert (parsed.a_rev, parsed.junit, parsed.results, parsed.quick) == ("origin/main", "j.xml", "res", True)


def test_the_recipes_keep_the_report_and_the_junit():
    steps = load(GITHUB)["jobs"]["ab"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    assert upload["if"] == "always()"
    assert "report.html" in upload["with"]["path"] and "${{ env.JUNIT }}" in upload["with"]["path"]
    art = load(GITLAB)["linklab-ab"]["artifacts"]
    assert art["when"] == "always" and art["reports"]["junit"] == "$JUNIT"
    assert any(p.endswith("report.html") for p in art["paths"])


# ---- examples/classroom/: GitHub Classroom autograding running `linklab check --junit` ----------

CLASSROOM = Path(__file__).resolve().parents[2] / "examples/classroom/autograding.yml"


def test_the_classroom_workflow_is_valid_by_githubs_schema_and_a_broken_one_is_not():
    doc = load(CLASSROOM)
    schema = json.loads(SCHEMAS[GITHUB].read_text())
    assert [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)] == []
    broken = copy.deepcopy(doc)
    broken["jobs"]["run-autograding-tests"]["steps"][0]["uses"] = 7
    assert list(jsonschema.Draft7Validator(schema).iter_errors(broken))


def test_the_classroom_grader_runs_linklab_check_with_junit_and_its_reporter_reads_that_step():
    import shlex
    doc = load(CLASSROOM)
    steps = doc["jobs"]["run-autograding-tests"]["steps"]
    grader = next(s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-command-grader"))
    argv = shlex.split(grader["with"]["command"])
    argv = argv[argv.index("linklab") + 1:]
    env = doc["env"]
    argv = [a.replace("$EXERCISE", env["EXERCISE"]).replace("$JUNIT", env["JUNIT"]).replace("$RESULT", env["RESULT"])
            for a in argv]
    parsed = _parser().parse_args(argv)
    assert (parsed.junit, parsed.json, parsed.student) == ("linklab-check.xml", "linklab-check.json", False)
    assert parsed.checks.endswith("exercises/mtu_path/checks.yaml")  # the bundled checks, by name
    reporter = next(s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-grading-reporter"))
    assert reporter["with"]["runners"] == grader["id"]
    assert reporter["env"] == {f"{grader['id'].upper()}_RESULTS": f"${{{{ steps.{grader['id']}.outputs.result }}}}"}
