"""`linklab init DIR` (linklab/init.py): the bundled files and a Makefile calling `linklab` in a
directory of the user's own; existing files refused (exit 2, named) unless --force."""

import subprocess
from pathlib import Path

import pytest

from linklab import bundled
from linklab.cli import main
from linklab.errors import UsageError
from linklab.init import FOLDERS, init

ROOT = Path(__file__).resolve().parents[2]


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_init_lays_out_the_bundled_folders_and_a_makefile(tmp_path):
    written = init(tmp_path / "mine", say=lambda _: None)
    got = tree(tmp_path / "mine")
    want = {str(p) for p in bundled.files() if p.parts[0] in FOLDERS} | {"Makefile"}
    assert set(got) == want and len(written) == len(want)
    assert got["topologies/bond2.yaml"] == (ROOT / "topologies/bond2.yaml").read_bytes()
    assert "exercises/mtu_path/checks.yaml" in got and "schemas/topology.schema.json" in got
    assert not any(k.startswith("controllers/") for k in got)  # linklab runs its bundled apps
    assert b".venv" not in got["Makefile"] and b"$(LINKLAB) sweep $(EXP) $(SWEEP_ARGS)" in got["Makefile"]


def test_the_makefile_calls_linklab_with_the_readmes_defaults(tmp_path):
    init(tmp_path, say=lambda _: None)
    def dry(target):
        return subprocess.run(["make", "-n", "--no-print-directory", "-C", str(tmp_path), target], capture_output=True, text=True,
                              check=True).stdout.splitlines()[-1]
    assert dry("sweep") == "linklab sweep experiments/e1_bonding_mtu.yaml --quick"
    assert dry("lab-up") == "linklab up topologies/bond2.yaml"
    validate = dry("validate").split()
    assert validate[:2] == ["linklab", "validate"] and "experiments/e1_bonding_mtu.yaml" in validate
    assert not [w for w in validate if w.endswith(".reference.yaml")]  # published figures, no experiment


def test_the_laid_out_files_validate_where_they_are(monkeypatch, tmp_path, capsys):
    init(tmp_path, say=lambda _: None)
    monkeypatch.chdir(tmp_path)
    files = [*map(str, Path("topologies").glob("*.yaml")),
             *(str(p) for p in Path("experiments").glob("*.yaml") if not p.name.endswith(".reference.yaml"))]
    assert main(["validate", *files]) == 0
    out = capsys.readouterr().out
    assert out.count(": valid ") == len(files) and str(ROOT) not in out  # these files, not the checkout's


def test_existing_files_are_refused_by_name_and_nothing_is_written(tmp_path, capsys):
    init(tmp_path, say=lambda _: None)
    (tmp_path / "topologies/bond2.yaml").write_text("mine\n")
    (tmp_path / "Makefile").unlink()
    before = tree(tmp_path)
    assert main(["init", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    n = len(before)  # every file but the Makefile exists: the first ten named, in order, then how many more
    assert f": {n} files would be overwritten: {tmp_path}/baselines/README.md, " in err
    assert f" and {n - 10} more; nothing was written" in err
    assert "linklab init --force" in err
    assert tree(tmp_path) == before  # not even the missing Makefile


def test_a_refusal_names_every_file_when_few(tmp_path):
    (tmp_path / "topologies").mkdir()
    (tmp_path / "topologies/bond2.yaml").write_text("mine\n")
    (tmp_path / "Makefile").write_text("mine\n")
    with pytest.raises(UsageError) as e:
        init(tmp_path, say=lambda _: None)
    assert e.value.exit_code == 2
    assert str(e.value) == (f"{tmp_path}: 2 files would be overwritten: {tmp_path}/Makefile, "
                            f"{tmp_path}/topologies/bond2.yaml; nothing was written")


def test_force_puts_the_bundled_files_back_and_keeps_the_users_own(tmp_path, capsys):
    init(tmp_path, say=lambda _: None)
    (tmp_path / "topologies/bond2.yaml").write_text("mine\n")
    (tmp_path / "topologies/my_lab.yaml").write_text("name: mine\n")
    assert main(["init", "--force", str(tmp_path)]) == 0
    assert (tmp_path / "topologies/bond2.yaml").read_bytes() == (ROOT / "topologies/bond2.yaml").read_bytes()
    assert (tmp_path / "topologies/my_lab.yaml").read_text() == "name: mine\n"
    assert "replaced" in capsys.readouterr().out


def test_a_file_in_the_way_of_the_directory_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="is not a directory"):
        init(tmp_path / "f", say=lambda _: None)
