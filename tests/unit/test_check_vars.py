"""Per-student variants: values derived from a seed, the same in a topology and its checks."""

from collections import Counter
from pathlib import Path

import pytest

from linklab.check.spec import load_checks
from linklab.errors import ValidationFailed
from linklab.lab import build_lab
from linklab.model import load_topology, variables

ROOT = Path(__file__).resolve().parents[2]


def _vars(spec: dict) -> dict[str, variables.Variable]:
    got, problems = variables.declared({"vars": spec})
    assert problems == []
    return got


def test_a_seed_gives_the_same_values_every_time_and_defaults_without_one():
    v = _vars({"mtu": {"choices": [4000, 6000, 9000], "default": 9000}, "members": {"range": [2, 4]}})
    assert variables.values(v, None) == {"mtu": 9000, "members": 2}
    assert variables.values(v, "s17") == variables.values(v, "s17")


def test_seeds_spread_over_every_choice():
    v = _vars({"mtu": {"choices": [4000, 6000, 9000]}})
    counts = Counter(variables.values(v, f"student{i}")["mtu"] for i in range(300))
    assert set(counts) == {4000, 6000, 9000}
    assert all(60 <= n <= 140 for n in counts.values()), counts  # 100 each expected; +-40 is > 4.9 sigma


def test_a_value_depends_on_the_declaration_not_only_on_the_seed():
    a = _vars({"x": {"choices": list(range(1000))}})
    b = _vars({"x": {"choices": list(range(999))}})
    differ = sum(variables.values(a, f"s{i}") != variables.values(b, f"s{i}") for i in range(50))
    assert differ >= 45


def test_ranges_step_and_keep_whole_numbers_whole():
    v = _vars({"mtu": {"range": [3000, 4000], "step": 500}, "loss": {"range": [0.5, 1.5], "step": 0.5}})
    assert v["mtu"].values() == [3000, 3500, 4000]
    assert v["loss"].values() == [0.5, 1.0, 1.5]
    assert all(isinstance(x, int) for x in v["mtu"].values())


def test_substitution_keeps_the_type_of_a_whole_value_and_writes_text_inside_text():
    data = {"links": [{"mtu": "${mtu}", "name": "bond${n}"}], "vars": {"mtu": "${keep}"}}
    out, problems = variables.substitute(data, {"mtu": 9000, "n": 3})
    assert problems == []
    assert out["links"][0] == {"mtu": 9000, "name": "bond3"}
    assert out["vars"] == {"mtu": "${keep}"}  # the declarations are not values


def test_an_unknown_variable_is_a_problem_at_its_path():
    _, problems = variables.substitute({"links": [{"mtu": "${mut}"}]}, {"mtu": 1})
    assert problems == [(("links", 0, "mtu"), "unknown variable 'mut' (valid: mtu; declare it under vars:)")]


def test_a_topology_with_vars_resolves_per_seed_and_records_nothing_without_one():
    lab_path = ROOT / "exercises" / "mtu_path" / "lab.yaml"
    seen = {load_topology(lab_path, seed=f"s{i}").links[0].mtu for i in range(40)}
    assert seen == {4000, 6000, 9000}
    assert load_topology(lab_path).links[0].mtu == 9000  # the default
    assert load_topology(lab_path).links[1].mtu == 1500  # the broken hop is no variable


def test_checks_get_the_topologys_values_for_the_same_seed():
    checks = ROOT / "exercises" / "mtu_path" / "checks.yaml"
    for seed in ("s1", "s2", "s3", "s4", "s5", "s6"):
        lab = build_lab(ROOT / "exercises" / "mtu_path" / "lab.yaml", [], seed=seed)
        spec = load_checks(checks, lab, seed)
        assert spec.by_id("path-mtu").mtu == lab.link("h1up").mtu
        assert spec.by_id("core-mtu").mtu == lab.link("h2up").mtu


def test_a_bond_with_a_member_count_from_the_seed_has_that_many():
    lab_path = ROOT / "exercises" / "bond_hash" / "lab.yaml"
    members = {len(build_lab(lab_path, [], seed=f"s{i}").link("bond").veths) for i in range(30)}
    assert members == {2, 3}


def test_a_bad_declaration_is_reported_with_its_line(tmp_path):
    topo = tmp_path / "t.yaml"
    topo.write_text("name: t\nvars:\n  mtu: {range: [9000, 1500]}\nhosts: {h1: {}, h2: {}}\n"
                    "links:\n  - endpoints: [h1, h2]\n    mtu: ${mtu}\n")
    with pytest.raises(ValidationFailed) as err:
        load_topology(topo)
    assert any("vars.mtu (line 3)" in p and "low end is above the high end" in p for p in err.value.problems), err.value.problems


def test_show_with_a_seed_prints_that_students_lab_and_its_values(capsys, monkeypatch):
    import yaml

    from linklab.cli import main
    monkeypatch.chdir(ROOT)
    assert main(["show", "exercises/bond_hash/lab.yaml", "--seed", "s17"]) == 0
    out = capsys.readouterr().out
    first, rest = out.split("\n", 1)
    members = variables.values(variables.declared({"vars": {"members": {"choices": [2, 3], "default": 2}}})[0], "s17")
    assert first == f"# seed 's17': members={members['members']}"
    lab = yaml.safe_load(rest)
    assert len(lab["links"][0]["veths"]) == members["members"]
