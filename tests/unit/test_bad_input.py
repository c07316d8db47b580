"""Every file linklab reads: a clear error with its path and exit 2, quickly, nothing changed."""

import json
import time

import pytest

from linklab import cli, state
from linklab.sweep.store import ResultsStore

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
