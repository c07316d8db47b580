"""linklab.osken_warm's client: when a controller kind falls back to a cold osken-manager (the
server itself, with real controllers: tests/integration/host/test_osken_warm.py)."""

import json
import os
import socket
import threading

import pytest

from linklab import osken_warm


@pytest.fixture
def fake_server():
    """An abstract socket of the test's own that answers each request with what it is given."""
    address = f"linklab-osken-warm-unit-{os.getpid()}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind("\0" + address)
    listener.listen(4)
    seen = []

    def serve(answer):
        conn, _ = listener.accept()
        with conn:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
            seen.append((json.loads(data), len(fds)))
            for fd in fds:
                os.close(fd)
            if answer is not None:
                conn.send(json.dumps(answer).encode())
            else:
                conn.recv(1)  # says nothing until the client hangs up

    def answering(answer):
        t = threading.Thread(target=serve, args=(answer,), daemon=True)
        t.start()
        return t

    yield address, answering, seen
    listener.close()


def _start(address, tmp_path, wait_s=5.0):
    with open(tmp_path / "log", "ab") as f:
        return osken_warm.start(["--ofp-tcp-listen-port", "6653", "app.py"], {"A": "1"}, "ns1", f.fileno(),
                                address=address, wait_s=wait_s)


def test_outside_the_lab_vm_no_server_is_asked(monkeypatch, tmp_path):
    monkeypatch.delenv("LINKLAB_IN_VM", raising=False)
    with open(tmp_path / "log", "ab") as f:
        assert osken_warm.start(["x"], {}, None, f.fileno()) is None


def test_the_pid_answered_is_returned_and_the_request_carries_args_env_namespace_and_log(fake_server, tmp_path):
    address, answering, seen = fake_server
    t = answering({"pid": 4242})
    assert _start(address, tmp_path) == 4242
    t.join(5)
    request, nfds = seen[0]
    assert request["args"] == ["--ofp-tcp-listen-port", "6653", "app.py"] and request["env"] == {"A": "1"}
    assert request["netns"] == "ns1" and request["cwd"] == os.getcwd() and nfds == 1


def test_an_error_answer_means_cold_and_says_why(fake_server, tmp_path, caplog):
    address, answering, _ = fake_server
    answering({"error": "FileNotFoundError: no such namespace"})
    assert _start(address, tmp_path) is None
    assert "could not start a controller" in caplog.text and "no such namespace" in caplog.text


def test_a_server_that_does_not_answer_in_time_means_cold(fake_server, tmp_path):
    address, answering, _ = fake_server
    answering(None)
    assert _start(address, tmp_path, wait_s=0.3) is None


def test_no_server_means_cold(tmp_path):
    assert _start(f"linklab-osken-warm-none-{os.getpid()}", tmp_path) is None
