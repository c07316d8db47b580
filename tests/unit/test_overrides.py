import pytest

from linklab.errors import UsageError
from linklab.model.overrides import apply_overrides, parse_path, split_assignment

DATA = {"defaults": {"mtu": 1500},
        "hosts": {"h1": {}, "h2": None},
        "links": [{"endpoints": ["h1", "h2"], "name": "bond", "bond": {"mode": "balance-rr"}},
                  {"endpoints": ["h1:eth9", "h2"]}]}


def test_parse_path_tokens():
    assert parse_path('hosts.h1.sysctls."net.ipv4.tcp_reordering"') == [
        ("key", "hosts"), ("key", "h1"), ("key", "sysctls"), ("key", "net.ipv4.tcp_reordering")]
    assert parse_path("links[*].mtu") == [("key", "links"), ("sel", "*"), ("key", "mtu")]


def test_split_assignment_parses_yaml_values():
    assert split_assignment("links[0].mtu=9000") == ("links[0].mtu", 9000)
    assert split_assignment("links[0].bond.options={miimon: 50}") == ("links[0].bond.options", {"miimon": 50})
    assert split_assignment('hosts.h1.sysctls."a.b=c"=x') == ('hosts.h1.sysctls."a.b=c"', "x")


def test_select_by_index_name_autoname_and_star():
    out = apply_overrides(DATA, [("links[bond].bond.mode", "802.3ad"), ("links[h1-h2].mtu", 9000),
                                 ("links[*].impair.delay", "1ms")])
    assert out["links"][0]["bond"]["mode"] == "802.3ad"
    assert out["links"][1]["mtu"] == 9000  # auto name of the unnamed link
    assert all(link["impair"]["delay"] == "1ms" for link in out["links"])
    assert DATA["links"][0]["bond"]["mode"] == "balance-rr"  # the input is not modified


def test_creates_missing_mappings_including_null_ones():
    out = apply_overrides(DATA, [('hosts.h2.sysctls."net.ipv4.tcp_reordering"', 127)])
    assert out["hosts"]["h2"] == {"sysctls": {"net.ipv4.tcp_reordering": 127}}


@pytest.mark.parametrize("path,fragment", [
    ("links[7].mtu", "index 7 out of range"),
    ("links[nope].mtu", "no item named 'nope' (valid: bond, h1-h2)"),
    ("defaults.mtu[0]", "not a list"),
])
def test_bad_overrides_are_usage_errors(path, fragment):
    with pytest.raises(UsageError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        apply_overrides(DATA, [(path, 1)])


def test_assignment_without_equals():
    with pytest.raises(UsageError, match="has no '='"):
        split_assignment("links[0].mtu")
