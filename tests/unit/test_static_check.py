"""The static check: ruff with pyflakes' rules (pyproject.toml [tool.ruff]) over the whole tree,
and over the exported Mininet scripts, where the runtime template's names (LAB, ...) are defined.

An undefined name in a line only a lab reaches (a forgotten import in the switches' reset) once
passed every unit test and failed in the kernel tier, minutes into the lab VM; this finds it in
a tenth of a second, without root.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).with_name("ruff")  # requirements.txt pins it into the venv
TREE = ["linklab", "tests", "bench", "controllers", "scripts"]


def ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_tree_passes_the_static_check():
    res = ruff(*TREE)
    assert res.returncode == 0, res.stdout + res.stderr


def test_the_check_finds_an_undefined_name_and_an_unused_import(tmp_path):
    # The configuration is the project's (--config), the file a mistake of each kind.
    bad = tmp_path / "bad.py"
    bad.write_text("import json\n\n\ndef reset():\n    return netlink.flush_neighbours('ns')\n")
    res = ruff("--config", str(ROOT / "pyproject.toml"), str(bad), cwd=tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "F821 Undefined name `netlink`" in res.stdout and "F401" in res.stdout, res.stdout


@pytest.mark.parametrize("topology", ["bond2.yaml", "sdn_pair.yaml"])
def test_an_exported_mininet_script_passes_the_static_check(topology, tmp_path):
    # The template is checked without F821 in the tree (its names come from the export): here it
    # is checked whole, as users run it, once for a bonded lab and once with a controller.
    from linklab import controllers
    from linklab.interop import mininet_export
    from linklab.interop.common import resolved_lab
    topo = ROOT / "topologies" / topology
    script = tmp_path / "lab_mn.py"
    script.write_text(mininet_export.export(resolved_lab(topo, [], scale=0.1), str(topo),
                                            osken_manager=controllers.manager()))
    res = ruff("--config", str(ROOT / "pyproject.toml"), str(script), cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
