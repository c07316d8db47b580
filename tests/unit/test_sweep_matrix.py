import re

import pytest

from linklab.sweep.matrix import MAX_ID, expand, point_id

MATRIX = {"bond_mode": ["802.3ad", "balance-rr"], "mtu": [1500, 9000], "streams": [1, 4]}
SAFE = re.compile(r"^[A-Za-z0-9._+-]+$")


def test_product_first_axis_outermost():
    keys = [p.key for p in expand(MATRIX)]
    assert keys[:3] == ["bond_mode=802.3ad,mtu=1500,streams=1",
                        "bond_mode=802.3ad,mtu=1500,streams=4",
                        "bond_mode=802.3ad,mtu=9000,streams=1"]
    assert len(keys) == 8 and len(set(keys)) == 8
    assert keys[-1] == "bond_mode=balance-rr,mtu=9000,streams=4"
    assert [p.index for p in expand(MATRIX)] == list(range(8))


def test_order_puts_named_axes_first_and_keeps_axes_ordered():
    points = expand(MATRIX, order=["streams"])
    assert list(points[0].axes) == ["streams", "bond_mode", "mtu"]
    assert [p.axes["streams"] for p in points] == [1, 1, 1, 1, 4, 4, 4, 4]
    assert points[0].key == "streams=1,bond_mode=802.3ad,mtu=1500"


def test_order_rejects_unknown_axis():
    with pytest.raises(ValueError, match="unknown axes \\['stream'\\]"):
        expand(MATRIX, order=["stream"])


def test_exclude_drops_points_matching_all_values():
    points = expand(MATRIX, exclude=[{"bond_mode": "balance-rr", "mtu": 9000}])
    assert len(points) == 6
    assert not any(p.axes["bond_mode"] == "balance-rr" and p.axes["mtu"] == 9000 for p in points)
    # Indices stay dense after exclusion.
    assert [p.index for p in points] == list(range(6))


def test_exclude_compares_types_strictly():
    # "1500" is not 1500: a string in the exclude must not drop the integer point.
    assert len(expand(MATRIX, exclude=[{"mtu": "1500"}])) == 8
    assert len(expand(MATRIX, exclude=[{"mtu": 1500}])) == 4


def test_include_appends_points_in_matrix_axis_order():
    points = expand(MATRIX, include=[{"streams": 8, "mtu": 9000, "bond_mode": "802.3ad"}])
    assert len(points) == 9
    assert points[-1].key == "bond_mode=802.3ad,mtu=9000,streams=8"
    assert points[-1].index == 8


def test_include_duplicating_a_product_point_adds_nothing():
    assert len(expand(MATRIX, include=[{"bond_mode": "802.3ad", "mtu": 1500, "streams": 1}])) == 8


def test_exclude_and_include_may_sit_inside_the_matrix():
    m = {**MATRIX, "exclude": [{"streams": 4}], "include": [{"bond_mode": "active-backup", "mtu": 1500, "streams": 1}]}
    points = expand(m)
    assert len(points) == 5
    assert "exclude" not in points[0].axes and "include" not in points[0].axes


@pytest.mark.parametrize("kw,fragment", [
    ({"exclude": [{"mtuu": 1500}]}, "unknown axes \\['mtuu'\\]"),
    ({"include": [{"bond_mode": "802.3ad", "mtu": 1500}]}, "lacks a value for axes \\['streams'\\]"),
    ({"exclude": [{}]}, "non-empty mapping"),
])
def test_bad_exclude_include_say_why(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        expand(MATRIX, **kw)


def test_empty_axis_is_named():
    with pytest.raises(ValueError, match="axis 'mtu' has no values"):
        expand({"bond_mode": ["802.3ad"], "mtu": []})


def test_non_list_axis_and_duplicate_values_rejected():
    with pytest.raises(ValueError, match="axis 'mtu': expected a list"):
        expand({"mtu": 1500})
    with pytest.raises(ValueError, match="axis 'mtu' lists the value 1500 more than once"):
        expand({"mtu": [1500, "1500"]})


def test_ids_are_stable_across_runs():
    first = [p.id for p in expand(MATRIX)]
    assert first == [p.id for p in expand(dict(MATRIX))]
    # Pinned: changing the id scheme would orphan every existing results directory.
    assert first[0] == "p000-bond_mode-802.3ad_mtu-1500_streams-1-cbae50fd"


def test_ids_safe_short_unique_and_sortable():
    long_a = "x" * 300 + "a"
    long_b = "x" * 300 + "b"
    points = expand({"tool": [long_a, long_b, "a b/c:d", {"nested": [1, 2]}, None, True]})
    ids = [p.id for p in points]
    assert all(len(i) <= MAX_ID for i in ids)
    assert all(SAFE.match(i) and not i.startswith(".") for i in ids)
    assert len(set(ids)) == len(ids)  # the two long values share their whole slug
    assert ids == sorted(ids)
    assert points[3].key == 'tool={"nested": [1, 2]}'
    assert points[5].key == "tool=true"


def test_index_prefix_widens_for_big_matrices():
    points = expand({"a": list(range(50)), "b": list(range(30))})
    assert points[0].id.startswith("p0000-")
    assert [p.id for p in points] == sorted(p.id for p in points)


def test_point_is_hashable_and_id_depends_on_key():
    p = expand(MATRIX)[0]
    assert p in {p}
    assert point_id(0, {"mtu": 1500}) != point_id(0, {"mtu": 9000})
