"""Every file linklab reads: a clear error with its path and exit 2, quickly, nothing changed."""

import json
import time

import pytest

from linklab import cli, state
from linklab.results.store import ResultsStore

BOMB = "\n".join(['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'] +
                 [f"a{i}: &a{i} [{','.join([f'*a{i-1}'] * 9)}]" for i in range(1, 10)]) + "\n"


@pytest.mark.parametrize("content, says", [
    (b"name: x\n\xff\xfe oops\n", "not UTF-8 text (byte 0xff on line 2)"),
    (b"\x7fELF\x02\x01\x01\x00\x00", "binary data"),
    (b"a: " + b"x" * (2 << 20), "larger than 1024 KiB"),
    (b"a: " + b"[" * 5000 + b"]" * 5000, "nested deeper than 64"),
    (BOMB.encode(), "once its aliases are expanded"),
    (b"a: &a [*a]\n", "recursive alias"),
    (b"[1, 2]\n", "expected a mapping"),
])
def test_validate_refuses_with_path_and_exit_2(tmp_path, capsys, content, says):
    f = tmp_path / "bad.yaml"
    f.write_bytes(content)
    t0 = time.monotonic()
    assert cli.main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and says in err, err
    assert time.monotonic() - t0 < 5


def test_directory_and_missing_file_are_usage_errors(tmp_path, capsys):
    assert cli.main(["validate", str(tmp_path)]) == 2
    assert cli.main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"owned": 5}'])
def test_damaged_state_file_is_exit_2_with_its_path(tmp_path, monkeypatch, capsys, content):
    monkeypatch.setenv("LINKLAB_STATE_DIR", str(tmp_path))
    state.labs_dir().mkdir(parents=True)
    state.path_for("lab1").write_bytes(content)
    assert cli.main(["status", "lab1"]) == 2
    assert str(state.path_for("lab1")) in capsys.readouterr().err
    assert state.path_for("lab1").read_bytes() == content  # nothing changed


def test_damaged_results_row_is_a_clear_error(tmp_path):
    from linklab.errors import UsageError
    from linklab.sweep.matrix import expand
    store = ResultsStore.create(tmp_path, "e", {"fingerprint": "f"})
    final = store.record(expand({"mtu": [1500]})[0], 1, {}, {"throughput_bps": 1})
    (final / "row.json").write_bytes(b"\x00\x01")
    with pytest.raises(UsageError, match=str(final / "row.json")):
        store.rows()
    (store.path / "manifest.json").write_text(json.dumps([1]))
    assert ResultsStore.runs(tmp_path, "e") == []  # an unreadable run is not resumed into


# Found by a 20 000-document fuzz campaign (seed 20261123): each was a traceback.
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("field, value, says", [
    ("delay", "1.0e+308", "links[0].impair.delay (line 7): 1e+308s is longer than a link delay can be here (at most 60s)"),
    ("delay", "90s", "links[0].impair.delay (line 7): 90s is longer than a link delay"),
    ("jitter", "1" + "0" * 400 + "ms", "links[0].impair.jitter (line 7): not a finite time"),
    ("rate", ".inf", "links[0].impair.rate (line 7): not a finite rate"),
    ("loss", ".nan", "links[0].impair.loss (line 7): not a finite percentage"),
    ("rate", str(10 ** 400), "links[0].impair.rate (line 7): not a finite rate"),
])
def test_a_quantity_that_is_not_a_finite_sane_number_is_refused_where_it_is(tmp_path, capsys, field, value, says):
    f = tmp_path / "t.yaml"
    f.write_text(f"name: t\nhosts: {{h1: {{}}, h2: {{}}}}\nlinks:\n  - endpoints: [h1, h2]\n    impair:\n"
                 f"      rate: 1gbit\n      {field}: {value}\n")
    assert cli.main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err


@pytest.mark.parametrize("matrix, says", [
    ("matrix: {}", "matrix (line 5): the matrix has no axes"),
    ("matrix: {mtu: [1500, 9000, 1500]}", "matrix (line 5): axis 'mtu' lists the value 1500 more than once"),
    ("matrix: {mtu: [1500, 9000]}\nquick: {matrix: {mtu: [9000, 9000]}}",
     "quick.matrix (line 6): axis 'mtu' lists the value 9000 more than once"),
])
def test_a_matrix_expand_refuses_is_a_located_problem_not_a_traceback(tmp_path, capsys, matrix, says):
    f = tmp_path / "e.yaml"
    f.write_text(f"name: e\ntopology: {ROOT / 'topologies' / 'bond2.yaml'}\nclient: h1\nserver: h2\n{matrix}\n")
    assert cli.main(["validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
