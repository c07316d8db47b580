"""The bundled files (linklab/bundled): found from the checkout or an installed wheel, named on
the command line by name, and all of them carried by the wheel (setup.py's globs)."""

import ast
import os
from pathlib import Path

import pytest

from linklab import bundled
from linklab.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_in_the_checkout_the_bundled_folders_are_its_own():
    assert bundled.checkout() == ROOT and bundled.root() == ROOT
    assert bundled.folder("experiments") == ROOT / "experiments"
    assert "e1_bonding_mtu" in bundled.names("experiments")
    assert "e1_bonding_mtu.reference" not in bundled.names("experiments")  # published figures, not an experiment
    assert bundled.names("exercises") == sorted(p.parent.name for p in (ROOT / "exercises").glob("*/exercise.yaml"))


def test_installed_the_package_data_is_found(monkeypatch, tmp_path):
    pkg = tmp_path / "site-packages" / "linklab" / "bundled"
    (pkg / "topologies").mkdir(parents=True)
    (pkg / "topologies" / "bond2.yaml").write_text("name: bond2\n")
    monkeypatch.setattr(bundled, "_HERE", pkg)
    assert bundled.root() == pkg and bundled.checkout() is None
    assert bundled.names("topologies") == ["bond2"]


def _setup_globs() -> dict[str, list[str]]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "BUNDLED")
    return ast.literal_eval(node.value)


def test_the_wheel_carries_every_bundled_file():
    globs = _setup_globs()
    assert set(globs) == set(bundled.FOLDERS)
    carried = set()
    for name, patterns in globs.items():
        d = ROOT / name
        carried |= {p for pat in patterns for p in d.glob(pat)} | set(d.glob("*.py"))  # .py: the package's modules
    have = {ROOT / p for p in bundled.files()}
    assert have and have - carried == set()


@pytest.mark.parametrize("arg, kinds, want", [
    ("e1_bonding_mtu", ("experiments",), "experiments/e1_bonding_mtu.yaml"),
    ("e1_bonding_mtu.yaml", ("experiments",), "experiments/e1_bonding_mtu.yaml"),
    ("bond2", ("topologies", "experiments"), "topologies/bond2.yaml"),
    ("failover", ("topologies", "experiments"), "experiments/failover.yaml"),
    ("mtu_path", ("exercises", "topologies"), "exercises/mtu_path/checks.yaml"),
    ("topologies/bond2.yaml", ("topologies",), "topologies/bond2.yaml"),  # the default, from elsewhere
])
def test_a_name_finds_the_bundled_file_from_any_directory(monkeypatch, tmp_path, arg, kinds, want):
    monkeypatch.chdir(tmp_path)
    assert bundled.locate(arg, kinds) == str(ROOT / want)
    monkeypatch.chdir(ROOT)  # under the working directory: shown relative, as the user would write it
    assert bundled.locate(arg, kinds) == (arg if Path(arg).exists() else want)


@pytest.mark.parametrize("arg", ["mine/missing.yaml", "missing.yaml", "missing.yml"])
def test_a_missing_path_is_left_to_its_reader_to_report(monkeypatch, tmp_path, arg):
    monkeypatch.chdir(tmp_path)
    assert bundled.locate(arg, ("topologies", "experiments")) == arg


def test_an_existing_file_wins_over_a_bundled_name(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    Path("bond2").write_text("name: mine\n")
    assert bundled.locate("bond2", ("topologies",)) == "bond2"


def test_an_unknown_name_lists_the_bundled_choices(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LookupError) as e:
        bundled.locate("e9", ("experiments",))
    assert str(e.value) == ("'e9' is no file here and names nothing bundled (experiments: "
                            + ", ".join(bundled.names("experiments")) + ")")


def test_the_cli_reads_a_bundled_file_by_name_and_refuses_an_unknown_one(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "bond2", "e1_bonding_mtu"]) == 0
    out = capsys.readouterr().out
    assert f"{ROOT}/topologies/bond2.yaml: valid topology" in out
    assert f"{ROOT}/experiments/e1_bonding_mtu.yaml: valid experiment" in out
    with pytest.raises(SystemExit) as e:
        main(["sweep", "e9_nothing", "--quick"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument experiment: 'e9_nothing' is no file here and names nothing bundled (experiments: bufferbloat, e1_bonding_mtu" in err
    assert os.listdir(tmp_path) == []


def test_show_builds_the_default_topology_outside_the_checkout(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert main(["show"]) == 0
    assert "name: bond2" in capsys.readouterr().out


def test_the_argtype_converts_and_reports(monkeypatch, tmp_path):
    import argparse
    monkeypatch.chdir(tmp_path)
    conv = bundled.argtype("topologies")
    assert conv("bond2") == str(ROOT / "topologies/bond2.yaml")
    with pytest.raises(argparse.ArgumentTypeError, match="topologies: bond2"):
        conv("nope")
