"""`--cluster` addresses, and what a sweep on a cluster shows while it runs (no Ray needed)."""

import io

import pytest

from linklab.cluster.address import Address, parse
from linklab.errors import UsageError
from linklab.sweep.progress import Progress


@pytest.mark.parametrize("text, want", [
    ("local:2", Address(local_nodes=2)), ("local:64", Address(local_nodes=64)),
    ("ray://10.0.0.1:10001", Address(address="ray://10.0.0.1:10001")),
    ("head.example.org:6379", Address(address="head.example.org:6379")),
])
def test_the_three_forms_are_understood(text, want):
    assert parse(text) == want and str(parse(text)) == text


@pytest.mark.parametrize("text", ["local:0", "local:65", "local:x", "nowhere", "ray://h", "h:0", "h:70000", "", "http://h:80"])
def test_anything_else_is_bad_input_naming_the_forms(text):
    with pytest.raises(UsageError) as e:
        parse(text)
    assert e.value.exit_code == 2 and ("ray://HOST:PORT" in str(e.value) or "local:N" in str(e.value))


def test_progress_says_what_runs_on_which_worker_and_what_is_left():
    now = [0.0]
    p = Progress(12, stream=io.StringIO(), clock=lambda: now[0], workers=2)
    p.set_running("n1", "bond_mode=802.3ad,mtu=450")
    p.set_running("n2", "bond_mode=balance-rr,mtu=450")
    now[0] = 4.0
    p.finish_unit(2.0)
    p.finish_unit(2.0)
    line = p.line()
    assert "[ 2/12]" in line and "10 left" in line
    assert "bond_mode=802.3ad,mtu=450 on n1" in line and "bond_mode=balance-rr,mtu=450 on n2" in line
    assert "ETA 10s" in line  # 2 s per unit, 10 left, shared by 2 workers
    p.set_running("n1", None)
    assert "on n1" not in p.line()
