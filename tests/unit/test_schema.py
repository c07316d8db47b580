"""`linklab schema topology|experiment` (linklab/schema.py): a JSON Schema generated from the
models, that a validator (jsonschema, as editors run one) finds valid itself, accepting every
bundled file and rejecting the golden bad files it can judge; the committed copies the bundled
files' modelines point to are what the command prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from linklab import schema, units
from linklab.check.spec import is_checks_file
from linklab.cli import main

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_BAD = sorted((ROOT / "tests/golden/topologies/bad").glob("*.yaml"))
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


def _is_experiment(data: dict) -> bool:
    return "matrix" in data  # what `linklab validate` tells them apart by (linklab/validate.py)


def _files() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {"topology": [], "experiment": []}
    for pattern in ("topologies/*.yaml", "experiments/*.yaml", "tests/golden/topologies/good/*.yaml",
                    "tests/integration/data/*.yaml"):
        for p in sorted(ROOT.glob(pattern)):
            if p.name.endswith(".reference.yaml"):  # published figures, not an experiment
                continue
            data = yaml.safe_load(p.read_text())
            if is_checks_file(data):  # coursework checks: a file of their own (linklab/check/spec.py)
                continue
            found["experiment" if _is_experiment(data) else "topology"].append(p)
    return found


FILES = _files()
VALIDATORS = {kind: Draft202012Validator(schema.schema(kind)) for kind in schema.KINDS}

# Golden bad files whose every problem relates parts of the file: only linklab's own checks see
# them (linklab validate, with the line: tests/golden/topologies/expected/). The schema accepts them.
SEMANTIC_ONLY = {
    "references.yaml": "endpoints naming nodes that do not exist, addresses on switch ports, bond options "
                       "their mode refuses, a primary member out of range: relations between parts of the file",
    "subnet_full.yaml": "more hosts on a segment than its given /30 holds: found when addresses are assigned",
    "routing_problems.yaml": "a route's via that is no neighbour, destinations and nodes that do not exist, a router "
                             "on one link, subnets no router reaches: relations between parts of the file",
    "ospf_problems.yaml": "a router's frr_config file that does not exist, a router on one link, subnets no router "
                          "reaches: the file system and relations between parts of the file",
    "services_names.yaml": "two background services of a node with one name: a relation between exec: items",
}
NOT_YAML = {"yaml_syntax.yaml": "not YAML: an editor's YAML parser marks it before any schema is read"}


@pytest.mark.parametrize("kind", schema.KINDS)
def test_the_schema_is_valid_json_schema_of_the_dialect_it_names(kind):
    s = schema.schema(kind)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(s)
    assert s["title"] == f"linklab {kind}" and s["additionalProperties"] is False


def test_there_are_files_of_both_kinds_to_check():
    assert len(FILES["topology"]) >= 30 and len(FILES["experiment"]) >= 8, FILES


@pytest.mark.parametrize("kind,path", [(k, p) for k, ps in FILES.items() for p in ps],
                         ids=lambda x: x.name if isinstance(x, Path) else x)
def test_every_bundled_file_is_valid_under_its_schema(kind, path):
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in VALIDATORS[kind].iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize("path", GOLDEN_BAD, ids=lambda p: p.name)
def test_every_golden_bad_file_the_schema_can_judge_is_rejected(path):
    if path.name in NOT_YAML:
        with pytest.raises(yaml.YAMLError):
            yaml.safe_load(path.read_text())
        return
    errors = list(VALIDATORS["topology"].iter_errors(yaml.safe_load(path.read_text())))
    if path.name in SEMANTIC_ONLY:
        assert errors == [], "the schema now judges it: take it off SEMANTIC_ONLY"
    else:
        assert errors, f"{path.name}: accepted by the schema"


def test_the_semantic_and_non_yaml_files_are_named_for_a_reason():
    names = {p.name for p in GOLDEN_BAD}
    assert set(SEMANTIC_ONLY) | set(NOT_YAML) <= names
    assert len(names - set(SEMANTIC_ONLY) - set(NOT_YAML)) >= 7  # the rest (7 of 10) the schema judges itself


def _rejects(kind: str, doc: dict) -> list[str]:
    return [e.message for e in VALIDATORS[kind].iter_errors(doc)]


BASE = {"name": "t", "hosts": {"h1": None, "h2": {}}, "links": [{"endpoints": ["h1", "h2:eth5"]}]}


@pytest.mark.parametrize("what,edit", [
    ("a unit nobody knows", lambda d: d["links"][0].update(impair={"rate": "10 parsecs"})),
    ("a delay beyond a minute", lambda d: d["links"][0].update(impair={"delay": 61})),
    ("a loss over 100 %", lambda d: d["links"][0].update(impair={"loss": 101})),
    ("an interface name Linux refuses", lambda d: d["links"][0].update(endpoints=["h1:bad name", "h2"])),
    ("a node name linklab refuses", lambda d: d["hosts"].update({"Bad-Name": {}})),
    ("a container without its image", lambda d: d["hosts"].update(c={"kind": "container"})),
    ("an image on a namespace host", lambda d: d["hosts"].update(c={"image": "x"})),
    ("a controller on a Linux bridge", lambda d: d.update(switches={"s1": {"controller": "hub"}})),
    ("stp on Open vSwitch", lambda d: d.update(switches={"s1": {"kind": "ovs", "stp": True}})),
    ("an empty command", lambda d: d["hosts"].update(h2={"exec": [""]})),
    ("a command that is neither text, a list nor a mapping", lambda d: d["hosts"].update(h2={"exec": [42]})),
    ("an exec mapping without run", lambda d: d["hosts"].update(h2={"exec": [{"background": True}]})),
    ("a service's ready with an unknown sign", lambda d: d["hosts"].update(
        h2={"exec": [{"run": "x", "background": True, "ready": {"socket": "/x"}}]})),
    ("a bind without a container path", lambda d: d["hosts"].update(c={"kind": "container", "image": "x",
                                                                         "binds": ["a:b"]})),
    ("a sysctl written with blanks", lambda d: d["hosts"].update(h2={"sysctls": {"net ipv4": 1}})),
    ("scale beyond 10", lambda d: d.update(scale=11)),
])
def test_the_topology_schema_rejects(what, edit):
    doc = json.loads(json.dumps(BASE))
    assert _rejects("topology", doc) == []
    edit(doc)
    assert _rejects("topology", doc), what


def test_the_topology_schema_takes_what_users_write():
    doc = {**json.loads(json.dumps(BASE)), "scale": "auto",
           "switches": {"s1": {"kind": "ovs", "controller": {"app": "hub", "port": 6653}, "fail_mode": "secure"}, "s2": None},
           "hosts": {"h1": {"exec": ["ip addr add 192.0.2.1/24 dev eth1", ["ip", "route", "show"],
                                     {"run": "python3 -m http.server 80", "background": True, "name": "web",
                                      "ready": {"port": 80, "timeout": "10s"}},
                                     {"run": ["sleep", "1"]}]},
                     "c1": {"kind": "container", "image": "linklab/base", "cmd": "sleep infinity",
                            "binds": ["r1/frr.conf:/etc/frr/frr.conf:ro", "~/x:/x", "/abs:/abs:rw"]}}}
    doc["links"][0]["impair"] = {"rate": "1gbit", "delay": "250us", "loss": "0.1%", "queue": "5ms",
                                 "from": {"h1": {"rate": 1e8, "queue": 100, "burst": "64k"}}}
    assert _rejects("topology", doc) == []


@pytest.mark.parametrize("units_of,samples", [
    (["", *units.RATE_UNITS], ["100mbit", " 1 Gbit ", "1000", ".5kbps", "10 parsecs", "1e9", "mbit", "1.5.2mbit"]),
    (["", *units.TIME_UNITS], ["1ms", "250 us", "2", "1MSEC", "1 min", "-1ms"]),
    ([*units.PACKET_UNITS, *units.TIME_UNITS, *units.SIZE_UNITS], ["100p", "5ms", "256kb", "1.5p", "5 parsecs"]),
])
def test_a_unit_pattern_accepts_the_text_its_parser_reads(units_of, samples):
    pattern = re.compile(units.pattern(units_of))
    parsers = {"100mbit": units.parse_rate, "1ms": units.parse_time, "100p": units.parse_queue}
    parse = parsers[samples[0]]
    for text in samples:
        try:
            parse(text)
            ok = True
        except ValueError:
            ok = False
        # The pattern judges the text's form; the parser also refuses a fractional packet count.
        if text != "1.5p":
            assert bool(pattern.search(text)) == ok, (text, ok)


def test_the_experiment_schema_rejects_unknown_axes_and_units():
    exp = yaml.safe_load((ROOT / "experiments/e1_bonding_mtu.yaml").read_text())
    assert _rejects("experiment", exp) == []
    for edit in ({"matrix": {**exp["matrix"], "colour": ["red"]}}, {"warmup": "2 fortnights"},
                 {"measure": ["throughput", "vibes"]}, {"repetitions": 0}, {"matrix": {"mtu": []}}):
        assert _rejects("experiment", {**exp, **edit}), edit


@pytest.mark.parametrize("kind", schema.KINDS)
def test_the_committed_schema_is_what_the_command_prints(kind, capsys):
    assert main(["schema", kind]) == 0
    printed = capsys.readouterr().out
    committed = ROOT / schema.FILES[kind]
    assert printed == committed.read_text(), f"regenerate: linklab schema {kind} > {schema.FILES[kind]}"
    assert json.loads(printed) == schema.schema(kind)


@pytest.mark.parametrize("kind,path", [(k, p) for k, ps in FILES.items() for p in ps
                                       if p.parent.name in ("topologies", "experiments")],
                         ids=lambda x: x.name if isinstance(x, Path) else x)
def test_every_bundled_file_names_its_schema_on_its_first_line(kind, path):
    m = MODELINE.match(path.read_text().splitlines()[0])
    assert m, f"{path.name}: no yaml-language-server modeline on its first line"
    assert (path.parent / m.group(1)).resolve() == (ROOT / schema.FILES[kind]).resolve()
