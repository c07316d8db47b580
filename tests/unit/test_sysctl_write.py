"""Sysctls that bound each other are written in whatever order the kernel accepts."""

import pytest

from linklab.backends.linux import sysctl
from linklab.errors import LinklabError


class BoundedKernel:
    """net.ipv4.tcp_reordering may not exceed tcp_max_reordering, as Linux 6.1 enforces."""

    def __init__(self, **values):
        self.values = {k.replace("__", "."): v for k, v in values.items()}

    def write(self, key: str, value: str) -> None:
        if key == "net.ipv4.tcp_reordering" and int(value) > int(self.values["net.ipv4.tcp_max_reordering"]):
            raise LinklabError(f"sysctl {key}={value}: Invalid argument")
        if key == "net.ipv4.tcp_max_reordering" and int(value) < int(self.values["net.ipv4.tcp_reordering"]):
            raise LinklabError(f"sysctl {key}={value}: Invalid argument")
        self.values[key] = value


@pytest.mark.parametrize("start,want", [
    ({"reordering": "3", "max": "3"}, {"reordering": "127", "max": "127"}),    # both up: max first
    ({"reordering": "127", "max": "127"}, {"reordering": "3", "max": "3"}),    # both down: reordering first
])
def test_bounded_sysctls_are_written_in_the_order_the_kernel_accepts(monkeypatch, start, want):
    k = BoundedKernel(net__ipv4__tcp_reordering=start["reordering"], net__ipv4__tcp_max_reordering=start["max"])
    monkeypatch.setattr(sysctl, "_write", k.write)
    sysctl.write_all({"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_reordering": want["reordering"],
                      "net.ipv4.tcp_max_reordering": want["max"]})
    assert k.values == {"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_reordering": want["reordering"],
                        "net.ipv4.tcp_max_reordering": want["max"]}


def test_a_value_no_order_makes_acceptable_is_refused_with_the_kernels_words(monkeypatch):
    k = BoundedKernel(net__ipv4__tcp_reordering="3", net__ipv4__tcp_max_reordering="3")
    monkeypatch.setattr(sysctl, "_write", k.write)
    with pytest.raises(LinklabError, match=r"sysctl net.ipv4.tcp_reordering=500: Invalid argument"):
        sysctl.write_all({"net.ipv4.tcp_reordering": "500", "net.ipv4.tcp_max_reordering": "300"})
    assert k.values["net.ipv4.tcp_max_reordering"] == "300"  # what could be written was
