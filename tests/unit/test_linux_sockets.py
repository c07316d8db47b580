"""TCP listeners from /proc/<pid>/net/tcp (linklab/linux/sockets.py), on tables captured in the
lab VM: an os-ken controller's namespace, listening on 127.0.0.1:6653 with its switch connected."""

import os
import socket
from pathlib import Path

from pyroute2 import netns

from linklab.linux import sockets

DATA = Path(__file__).resolve().parent.parent / "data" / "tools"


def test_a_listener_is_found_and_connections_are_not():
    table = (DATA / "proc_net_tcp_controller.txt").read_text()
    # Rows: the listener on :19FD (6653), and both ends of the switch's connection to it (state 01,
    # one of them with local port 6653 too): only the listener counts, and the ephemeral port not.
    assert sockets.listening_ports(table) == {6653}


def test_an_empty_table_has_no_listener():
    assert sockets.listening_ports((DATA / "proc_net_tcp6_empty.txt").read_text()) == set()


def test_a_process_outside_the_namespace_never_counts(tmp_path, monkeypatch):
    # This process is not in a namespace named "ll-nowhere" (none exists): whatever its own
    # namespace listens on, the answer is no, and a pid that does not exist is no too.
    monkeypatch.setattr(netns, "NETNS_RUN_DIR", str(tmp_path))
    (tmp_path / "ll-nowhere").write_text("")
    assert sockets.listens(os.getpid(), 6653, "ll-nowhere") is False
    assert sockets.listens(2**22 + 1, 6653, "ll-nowhere") is False


def test_a_listener_in_the_process_namespace_is_seen_until_closed(tmp_path, monkeypatch):
    # This process's own namespace, named the way `ip netns` names one (a bound ns file): a socket
    # it listens on shows, and no longer once closed.
    monkeypatch.setattr(netns, "NETNS_RUN_DIR", str(tmp_path))
    (tmp_path / "mine").symlink_to(f"/proc/{os.getpid()}/ns/net")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        assert sockets.listens(os.getpid(), port, "mine") is False  # bound, not listening
        s.listen()
        assert sockets.listens(os.getpid(), port, "mine") is True
    assert sockets.listens(os.getpid(), port, "mine") is False
