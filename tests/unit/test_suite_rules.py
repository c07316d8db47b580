"""The test suite's own rules hold: an empty parametrize is an error (not a pass), and every test
has a time limit (pytest-timeout) that fails a hung test instead of letting it run forever."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _pytest(tmp_path, body: str, *args: str) -> subprocess.CompletedProcess:
    f = tmp_path / "test_probe.py"
    f.write_text(body)
    # This project's configuration (pyproject.toml), applied to a file outside the suite.
    return subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
                           "-p", "no:cacheprovider", "-q", str(f), *args],
                          capture_output=True, text=True, timeout=120)


def test_an_empty_parametrize_fails_collection(tmp_path):
    res = _pytest(tmp_path, "import pytest\n\n@pytest.mark.parametrize('x', [])\ndef test_x(x):\n    pass\n")
    assert res.returncode != 0 and "Empty parameter set" in res.stdout + res.stderr, res.stdout


def test_a_hung_test_fails_at_its_time_limit(tmp_path):
    body = ("import time\nimport pytest\n\n@pytest.mark.timeout(1)\ndef test_hangs():\n    time.sleep(30)\n\n"
            "def test_has_the_default_limit(request):\n    assert request.config.getini('timeout') == '120'\n")
    res = _pytest(tmp_path, body)
    assert res.returncode == 1 and "Timeout" in res.stdout and "1 failed, 1 passed" in res.stdout, res.stdout
