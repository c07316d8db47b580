"""Optional parts (linklab/extras.py): a missing one is named with its install command, exit 4,
never an ImportError. Missing modules are simulated: sys.modules[name] = None makes their import fail."""

import ast
import sys
from pathlib import Path

import pytest

from linklab import bundled, controllers, extras
from linklab.cli import main
from linklab.errors import EXIT_ENV, EnvironmentProblem

ROOT = Path(__file__).resolve().parents[2]
OPTIONAL = {m.split(".")[0] for e in extras.EXTRAS.values() for m in e.modules}


def test_a_present_extra_is_present_and_loads():
    assert extras.missing("sdn") == [] and extras.present("cluster")
    assert extras.load("os_ken", "sdn", "x").__name__ == "os_ken"


def test_a_missing_module_makes_its_extra_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "os_ken", None)
    assert extras.missing("sdn") == ["os_ken"]
    assert not extras.present("sdn") and extras.present("cluster")


def test_load_of_a_missing_part_names_the_extra_and_its_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(EnvironmentProblem) as e:
        extras.load("ray", "cluster", "--cluster")
    assert e.value.exit_code == EXIT_ENV == 4
    text = e.value.render()
    assert "--cluster needs linklab's optional part [cluster]" in text and "ray cannot be imported" in text
    assert f"install it: {ROOT}/scripts/setup.sh --with cluster" in text and f"pip install -e '{ROOT}[cluster]'" in text


def test_load_leaves_another_import_error_as_it_is(monkeypatch, tmp_path):
    (tmp_path / "broken_part.py").write_text("import no_such_module_of_anyone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_module_of_anyone"):
        extras.load("broken_part", "sdn", "x")


REQUIRES = ["pyroute2<0.10,>=0.9.7", 'os-ken<4,>=3.1.1; extra == "sdn"', 'eventlet>=0.41.3; extra == "sdn"',
            'ray[client]<3,>=2.60; extra == "cluster"']


def test_installed_the_command_installs_the_extras_requirements_into_this_interpreter(monkeypatch):
    monkeypatch.setattr(bundled, "checkout", lambda: None)
    monkeypatch.setattr(extras.importlib.metadata, "requires", lambda name: REQUIRES)
    monkeypatch.setattr(sys, "prefix", "/opt/venv")
    assert extras.install_command("sdn") == f"{sys.executable} -m pip install 'os-ken<4,>=3.1.1' 'eventlet>=0.41.3'"
    assert extras.install_command("cluster") == f"{sys.executable} -m pip install 'ray[client]<3,>=2.60'"


def test_installed_by_pipx_the_command_injects_into_its_venv(monkeypatch):
    monkeypatch.setattr(bundled, "checkout", lambda: None)
    monkeypatch.setattr(extras.importlib.metadata, "requires", lambda name: REQUIRES)
    monkeypatch.setattr(sys, "prefix", "/root/.local/share/pipx/venvs/linklab")
    assert extras.install_command("cluster") == "pipx inject linklab 'ray[client]<3,>=2.60'"


def test_no_metadata_names_the_extra(monkeypatch):
    def gone(name):
        raise extras.importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(bundled, "checkout", lambda: None)
    monkeypatch.setattr(extras.importlib.metadata, "requires", gone)
    monkeypatch.setattr(sys, "prefix", "/opt/venv")
    assert extras.install_command("docs").endswith("-m pip install 'linklab[docs]'")


def test_a_controller_without_os_ken_names_the_sdn_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # no osken-manager beside it
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "os_ken", None)
    with pytest.raises(EnvironmentProblem) as e:
        controllers.manager()
    assert e.value.exit_code == 4 and "[sdn]" in str(e.value) and "os_ken" in str(e.value)
    assert e.value.hint.startswith("install it: ")


def test_sweep_on_a_cluster_without_ray_exits_4_naming_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(tmp_path)  # nothing is written: refused before anything starts
    monkeypatch.setitem(sys.modules, "ray", None)
    rc = main(["sweep", "e1_bonding_mtu", "--quick", "--cluster", "local:2"])
    err = capsys.readouterr().err
    assert rc == 4, err
    assert "[cluster]" in err and "install it:" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _optional_imports(path: Path):
    """(line, module, at module level?) of each import of an optional part in `path`."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            if name.split(".")[0] in OPTIONAL:
                yield node.lineno, name, id(node) in top


# Imports of an optional part's submodules after extras.load() has imported the part itself, and
# the warm os-ken server, which the lab VM's agent starts only when [sdn] is present.
AFTER_LOAD = {"linklab/cluster/run.py", "linklab/cluster/session.py", "linklab/osken_warm.py"}


def test_every_import_of_an_optional_part_goes_through_extras():
    found = []
    for path in sorted((ROOT / "linklab").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "linklab/interop/mininet_runtime.py":  # a template: the exported script's code, not linklab's
            continue
        for line, name, at_top in _optional_imports(path):
            if at_top or rel not in AFTER_LOAD:
                found.append(f"{rel}:{line} imports {name}")
    assert found == []
    # and the allowed ones exist: the list does not outlive the code it excuses
    assert all(list(_optional_imports(ROOT / rel)) for rel in AFTER_LOAD)
