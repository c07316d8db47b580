"""Imports point one way: down the layers named here, never up (a unit test that walks every
import of linklab/, including those inside functions), and never round in a circle.

The layers, bottom first. A module may import its own layer and those below it. Each entry names
one module exactly ("linklab.errors") or a package with every module under it ("linklab.model.*");
the longest entry that names a module places it, and a module no entry names fails
test_every_module_is_in_a_layer: whoever adds one says where it belongs. Imports under
`if TYPE_CHECKING:` are for annotations only and are not followed by the layers test; the circles
test follows them too (a circle drawn for types is still two modules that need each other).
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "linklab"

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # what everything may use: errors and exit codes, units, files, processes, the console, the
    # kernel's features, the bundled controller apps, lab state files, the bundled files, optional parts,
    # JUnit XML, the wait until a started program is ready
    ("foundation", ("linklab", "linklab.errors", "linklab.units", "linklab.fsutil", "linklab.runner",
                    "linklab.procs", "linklab.console", "linklab.kernel", "linklab.controllers", "linklab.osken_warm",
                    "linklab.state", "linklab.bundled", "linklab.extras", "linklab.junit", "linklab.setup_groups",
                    "linklab.ready")),
    ("model", ("linklab.model.*",)),              # topology in, resolved lab out: pure
    ("linux", ("linklab.linux.*", "linklab.docker.*")),  # netlink, tc plans, OVS output, the Docker API: no lab knowledge
    ("tools", ("linklab.measure.*",)),            # one class per measurement tool, pure parsers
    ("backends", ("linklab.backends.*",)),        # realize a resolved lab; node kinds
    ("handle", ("linklab.handle",)),              # a running lab: model, backend, namespaces
    ("probes", ("linklab.measure.probes.*", "linklab.measure.traffic")),  # a repetition, against a handle
    ("vm", ("linklab.vm.*",)),                    # the lab VM, its agent, the host's CPU
    ("lab", ("linklab.lab", "linklab.placement", "linklab.status_view", "linklab.provision")),  # lifecycle, where it runs
    ("graph", ("linklab.graph.*",)),              # a lab drawn: the model, marked by what status reads
    ("results", ("linklab.results.*",)),          # a run on disk: written, found, read back
    ("sweep", ("linklab.sweep.*",)),              # experiments run against a lab
    ("check", ("linklab.check.*",)),              # coursework checks against a running lab, exercises
    ("verdict", ("linklab.verdict.*",)),          # does run B differ from run A (docs/verdicts.md)
    ("published", ("linklab.published.*",)),      # runs beside what the papers published
    ("report", ("linklab.report.*",)),            # presenting runs: tables, figures, report.md/html
    ("interop", ("linklab.interop.*",)),          # other tools' formats
    ("cluster", ("linklab.cluster.*",)),          # sweeps across machines on Ray: above sweep, below the CLI
    ("ab", ("linklab.ab.*",)),                    # two arms' stepwise sweeps side by side, then the verdict
    ("commands", ("linklab.validate", "linklab.schema", "linklab.init", "linklab.doctor", "linklab.sweep.cli",
                  "linklab.report.cli", "linklab.interop.cli", "linklab.ab.cli", "linklab.check.cli",
                  "linklab.graph.cli")),
    ("cli", ("linklab.cli", "linklab.__main__")),  # the parser the sub-commands add themselves to
]

# Packages reached only through one door, whatever the layers allow: code above the backend
# talks to the registry and the Backend interface (linklab/backends/__init__.py, base.py), and
# only placement (and the CLI's own `vm` and `clean`) reach into the lab VM.
ONLY_THROUGH: dict[str, tuple[str, ...]] = {
    "linklab.backends.linux": ("linklab.backends",),
    "linklab.vm": ("linklab.vm", "linklab.placement", "linklab.cli", "linklab.doctor"),
}


def names(entry: str, module: str) -> bool:
    """Whether a LAYERS entry names `module`: itself, or a package's ("pkg.*") every module."""
    if entry.endswith(".*"):
        package = entry[:-2]
        return module == package or module.startswith(package + ".")
    return module == entry


def layer_of(module: str) -> int:
    """The rank of the layer whose entry names `module` most closely (the longest entry)."""
    best, rank = "", None
    for i, (_, entries) in enumerate(LAYERS):
        for e in entries:
            if names(e, module) and len(e) > len(best):
                best, rank = e, i
    assert rank is not None, f"{module} is in no layer: name it in LAYERS"
    return rank


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(path: Path, root: Path = ROOT, annotations: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every linklab module `path` (under `root`) imports, wherever in the file;
    those under `if TYPE_CHECKING:` only with `annotations`."""
    me = module_name(path, root)
    tree = ast.parse(path.read_text())
    skip = set() if annotations else _type_checking_lines(tree)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "linklab"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = me.split(".") if path.name == "__init__.py" else me.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "linklab":
                continue
            for a in node.names:  # `from linklab import lab` imports the module linklab.lab
                sub = f"{target}.{a.name}"
                is_module = (root / (sub.replace(".", "/") + ".py")).exists() or (root / sub.replace(".", "/")).is_dir()
                out.append((node.lineno, sub if is_module else target))
    return out


def unplaced(root: Path = ROOT) -> list[str]:
    """The modules under root/linklab that no LAYERS entry names."""
    out = []
    for path in sorted((root / "linklab").rglob("*.py")):
        try:
            layer_of(module_name(path, root))
        except AssertionError:
            out.append(module_name(path, root))
    return out


def circles(root: Path = ROOT) -> list[set[str]]:
    """Every set of two or more modules under root/linklab that import each other round in a
    circle (strongly connected: each reaches every other), counting imports inside functions and
    under TYPE_CHECKING."""
    graph = {module_name(p, root): {t for _, t in imports(p, root, annotations=True)}
             for p in (root / "linklab").rglob("*.py")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = set()
            while not members or v not in members:
                members.add(stack.pop())
            if len(members) > 1:
                found.append(members)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_layer():
    assert not unplaced(), "modules no layer names (add each to LAYERS where it belongs):\n" + "\n".join(unplaced())


def test_a_module_nobody_placed_fails_and_the_package_itself_places_nothing(tmp_path):
    """The test itself: a new module at the top of linklab (which the entry "linklab" names only
    as the package's own __init__) and one in a package no layer names are both reported."""
    (tmp_path / "linklab" / "newpkg").mkdir(parents=True)
    for f in ("__init__.py", "errors.py", "newthing.py", "newpkg/__init__.py", "newpkg/mod.py"):
        (tmp_path / "linklab" / f).write_text("")
    assert unplaced(tmp_path) == ["linklab.newpkg", "linklab.newpkg.mod", "linklab.newthing"]
    with pytest.raises(AssertionError, match="linklab.newthing is in no layer"):
        layer_of("linklab.newthing")
    assert layer_of("linklab") == layer_of("linklab.errors") == 0


def test_no_import_circle():
    found = circles()
    assert not found, "modules that import each other round in a circle (one of them must not need the " \
        "other: move what both need below both, let a registry list its kinds without a kind importing it, " \
        "or pass it as a parameter):\n" + "\n".join(" <-> ".join(sorted(c)) for c in found)


def test_the_circles_test_sees_a_circle_closed_inside_a_function_or_for_types(tmp_path):
    """The test itself: a circle closed by an import inside a function, one closed under
    TYPE_CHECKING, and a chain that is no circle."""
    pkg = tmp_path / "linklab" / "probe"
    pkg.mkdir(parents=True)
    (tmp_path / "linklab" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from linklab.probe import b\n")
    (pkg / "b.py").write_text("def f():\n    from linklab.probe import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nfrom linklab.probe.d import x\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from linklab.probe import c\nx = 1\n")
    (pkg / "e.py").write_text("from linklab.probe import a\n")
    assert sorted(map(sorted, circles(tmp_path))) == [["linklab.probe.a", "linklab.probe.b"],
                                                      ["linklab.probe.c", "linklab.probe.d"]]


def test_no_import_points_up_a_layer():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        for line, target in imports(path):
            if layer_of(target) > layer_of(me):
                upward.append(f"{path.relative_to(ROOT)}:{line}: {me} ({LAYERS[layer_of(me)][0]}) imports "
                              f"{target} ({LAYERS[layer_of(target)][0]})")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_packages_reached_only_through_their_door():
    strays = []
    for path in sorted(PACKAGE.rglob("*.py")):
        me = module_name(path)
        for line, target in imports(path):
            for package, doors in ONLY_THROUGH.items():
                inside = target == package or target.startswith(package + ".")
                if inside and not any(me == d or me.startswith(d + ".") for d in doors):
                    strays.append(f"{path.relative_to(ROOT)}:{line}: {me} imports {target} "
                                  f"(only {', '.join(doors)} may)")
    assert not strays, "\n".join(strays)


def test_the_backend_uses_no_measurement_tool():
    """The pipeline runs backend -> lab -> sweep -> measure: realizing a lab (its services'
    readiness too: linklab/ready.py, below both) never needs a measurement tool's module."""
    reaching = [f"{p.relative_to(ROOT)}:{line}: {target}" for p in sorted((PACKAGE / "backends").rglob("*.py"))
                for line, target in imports(p) if target == "linklab.measure" or target.startswith("linklab.measure.")]
    assert not reaching, "the backend imports measurement tools:\n" + "\n".join(reaching)


def test_the_walk_sees_imports_inside_functions_and_relative_ones(tmp_path):
    """The test itself: it must catch an upward import wherever it hides. The probe is a copy of
    the package's shape under tmp_path, so the tests walking linklab/ at the same time never see it."""
    for f in ("__init__.py", "lab.py", "measure/__init__.py", "sweep/__init__.py", "sweep/engine.py",
              "report/__init__.py", "report/build.py"):
        (tmp_path / "linklab" / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "linklab" / f).write_text("")
    mod = tmp_path / "linklab" / "measure" / "_layers_probe.py"
    mod.write_text("def f():\n    from linklab.sweep import engine\n    from ..report import build\n"
                   "    from linklab import lab\n")
    found = [t for _, t in imports(mod, tmp_path)]
    assert found == ["linklab.sweep.engine", "linklab.report.build", "linklab.lab"]
    assert all(layer_of(t) > layer_of("linklab.measure._layers_probe") for t in found)


def test_every_way_of_running_a_sweep_builds_its_run_through_the_one_session_and_no_import_circles_back():
    """A sweep's executors (the lab's engine, the dry run, a cluster's driver, the A/B arms'
    stepwise executor) find, fingerprint and describe their run through linklab.sweep.session; the
    dry run and the cluster driver never import the lab engine (the circle dry <-> engine is gone)."""
    by_module = {module_name(p): {t for _, t in imports(p)} for p in PACKAGE.rglob("*.py")}
    for module in ("linklab.sweep.engine", "linklab.sweep.dry", "linklab.cluster.run"):
        assert "linklab.sweep.session" in by_module[module], module
    assert "linklab.sweep.engine" not in by_module["linklab.sweep.dry"]
    assert "linklab.sweep.engine" not in by_module["linklab.cluster.run"]
    assert "linklab.sweep.engine" not in by_module["linklab.sweep.session"]
    # the stepwise executor plugs into the engine without the session knowing it
    assert "linklab.sweep.stepwise" not in by_module["linklab.sweep.session"] | by_module["linklab.sweep.engine"]
    # what surrounds measuring (partial results removed, failed ones retried, the run marked
    # complete) is the session's `fill` alone: no executor writes it again
    for module in ("linklab/sweep/engine.py", "linklab/sweep/dry.py", "linklab/cluster/run.py"):
        text = (PACKAGE.parent / module).read_text()
        assert "fill(" in text and "clean_partial(" not in text and "mark_complete(" not in text, module
