"""Exit codes: one meaning each, decided in linklab/errors.py and documented once, in
docs/commands.md's table; the --help texts point there instead of restating them."""

import re
from pathlib import Path

import pytest

from linklab import errors
from linklab.errors import (EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_NO_LAB, EXIT_OK, EXIT_WARNINGS, NoLabUp,
                            StateError, result_exit_code)

ROOT = Path(__file__).resolve().parents[2]


def defined() -> dict[str, int]:
    return {k: v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}


def documented() -> dict[str, int]:
    text = (ROOT / "docs" / "commands.md").read_text()
    section = text.split("## Exit codes", 1)[1]
    return {m[2]: int(m[1]) for m in re.finditer(r"^\| (\d+) \| `(EXIT_\w+)` \|", section, re.M)}


def test_every_code_has_one_meaning_and_the_table_in_docs_is_errors_py():
    codes = defined()
    assert len(set(codes.values())) == len(codes), codes  # no number with two names
    assert documented() == codes


def test_the_common_codes_keep_their_numbers():
    # scripts test these: ok, a bad result, bad input, the machine lacks something
    assert (errors.EXIT_OK, errors.EXIT_FAILURE, errors.EXIT_USAGE, errors.EXIT_ENV) == (0, 1, 2, 4)
    assert len({errors.EXIT_STATE, EXIT_NO_LAB, EXIT_INCONCLUSIVE, EXIT_WARNINGS, errors.EXIT_ENV}) == 5


@pytest.mark.parametrize("failed,inconclusive,warned,code", [
    (False, False, False, EXIT_OK),
    (False, False, True, EXIT_WARNINGS),
    (False, True, True, EXIT_INCONCLUSIVE),
    (True, True, True, EXIT_FAILURE),
    (True, False, False, EXIT_FAILURE),
])
def test_a_failure_outranks_inconclusive_which_outranks_a_warning(failed, inconclusive, warned, code):
    assert result_exit_code(failed, inconclusive, warned) == code


def test_no_lab_up_is_a_state_error_with_its_own_code():
    e = NoLabUp("no lab is up")
    assert isinstance(e, StateError) and e.exit_code == EXIT_NO_LAB != StateError("x").exit_code


@pytest.mark.parametrize("argv", [[], ["ab"], ["check"], ["compare"]])
def test_help_points_at_the_table_instead_of_restating_it(argv, capsys):
    from linklab.cli import main
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = capsys.readouterr().out
    assert "docs/commands.md#exit-codes" in text
    assert not re.search(r"\b[0-9] (only warnings|inconclusive|no lab)", text), text


@pytest.mark.parametrize("argv,code,says", [
    (["check", "exercises/mtu_path/checks.yaml"], EXIT_NO_LAB, "no lab is up"),  # a good file: then the lab
    (["check", "topologies/bond2.yaml"], errors.EXIT_USAGE, "topologies/bond2.yaml: no checks (it is a topology)"),
    (["check", "experiments/e1_bonding_mtu.yaml"], errors.EXIT_USAGE, "no checks (it is an experiment)"),
    (["check"], EXIT_NO_LAB, "no lab is up"),  # the lab's own topology's checks: the lab first
])
def test_check_judges_its_file_before_it_looks_for_a_lab(argv, code, says, tmp_path, monkeypatch, capsys):
    from linklab.cli import main
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path / "state"))
    assert main(argv) == code
    assert says in capsys.readouterr().err
