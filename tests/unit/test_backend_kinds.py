"""Node kinds behind a registry, and code above the backend reaching labs only through it."""

import ast
from pathlib import Path

import pytest

from linklab.backends.linux import kinds
from linklab.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
ABOVE_BACKEND = ["linklab/sweep", "linklab/lab.py", "linklab/status_view.py"]


def test_every_kind_offers_the_same_verbs():
    assert set(kinds.REGISTRY) == {"host", "bridge", "ovs", "controller"}
    for name, mod in kinds.REGISTRY.items():
        for verb in ("check", "configure", "inspect", "remove"):
            assert callable(getattr(mod, verb, None)), f"kind {name} lacks {verb}"


def test_unknown_kind_lists_the_valid_ones():
    with pytest.raises(UsageError) as e:
        kinds.module("p4switch")
    assert "valid: host, bridge, ovs, controller" in str(e.value)


def test_sweep_lab_and_status_import_no_backend_internals():
    files = [p for entry in ABOVE_BACKEND for p in ((ROOT / entry).rglob("*.py") if (ROOT / entry).is_dir()
                                                    else [ROOT / entry])]
    offenders = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            offenders += [f"{f.relative_to(ROOT)}: {n}" for n in names if n.startswith("linklab.backends.linux")]
    assert not offenders
