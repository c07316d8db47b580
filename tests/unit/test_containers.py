"""Container nodes without Docker: the API's pure parts on captured bytes, the container config a
node gets, ownership by labels, and the kind's verbs against a fake engine (no root, no dockerd)."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from pathlib import Path

import pytest

from linklab import runner
from linklab.backends.linux import kinds
from linklab.backends.linux.kinds import container as ctr
from linklab.backends.linux.names import Mark
from linklab.docker import api as dapi
from linklab.docker import engine, images
from linklab.errors import EnvironmentProblem, StateError
from linklab.model import Context, load_topology, resolve
from linklab.status_view import render

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(30)


def lab():
    return resolve(load_topology(ROOT / "topologies/containers.yaml"), Context())


# ---- the API's pure parts ------------------------------------------------------------------------

def frame(stream: int, text: bytes) -> bytes:
    return struct.pack(">BxxxI", stream, len(text)) + text


def test_logs_of_a_non_tty_container_are_demultiplexed_in_order():
    # As dockerd sends them (GET /containers/x/logs, no TTY): stdout and stderr frames interleaved.
    raw = frame(1, b"starting\n") + frame(2, b"sleep: invalid time interval 'forever'\n") + frame(1, b"bye\n")
    assert dapi.demux_logs(raw) == "starting\nsleep: invalid time interval 'forever'\nbye\n"
    assert dapi.demux_logs(b"plain text from a TTY container\n") == "plain text from a TTY container\n"
    assert dapi.demux_logs(b"") == ""


def test_progress_stream_errors_are_found():
    ok = b'{"status":"Pulling from library/alpine"}\r\n{"status":"Digest: sha256:ab"}\r\n'
    bad = ok + b'{"errorDetail":{"message":"pull access denied"},"error":"pull access denied for nosuch"}\r\n'
    assert dapi.stream_error(ok) is None
    assert dapi.stream_error(bad) == "pull access denied for nosuch"


def test_label_filters_and_image_names():
    assert json.loads(dapi.label_filter({"linklab.lab": "x", "linklab.id": None})) == {
        "label": ["linklab.id", "linklab.lab=x"]}
    assert dapi.split_image("linklab/base") == ("linklab/base", "latest")
    assert dapi.split_image("reg.example:5000/frr:9.1") == ("reg.example:5000/frr", "9.1")
    assert dapi.split_image("reg.example:5000/frr") == ("reg.example:5000/frr", "latest")
    assert images.tarball("linklab/base").name == "linklab_base.tar"
    assert images.tarball("linklab/base:latest") == images.tarball("linklab/base")
    assert images.tarball("frr:9.1").name == "frr_9.1.tar"


def test_api_speaks_http_over_a_unix_socket(tmp_path):
    """A real unix socket answering like dockerd: status, JSON body, and 404 as None."""
    path = tmp_path / "d.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(4)
    seen = []

    def serve():
        for _ in range(2):
            conn, _ = srv.accept()
            req = conn.recv(65536).decode()
            seen.append(req.split("\r\n")[0])
            if "/containers/nosuch/json" in req:
                body, status = b'{"message":"No such container: nosuch"}', "404 Not Found"
            else:
                body, status = b'[{"Id":"abc","Names":["/ll-t-c1"],"Labels":{"linklab.id":"1"}}]', "200 OK"
            conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    api = dapi.Api(path, timeout=5)
    assert api.containers({"linklab.id": None})[0]["Id"] == "abc"
    assert api.inspect("nosuch") is None
    t.join(5)
    assert seen[0].startswith("GET /containers/json?all=1&filters=") and seen[1] == "GET /containers/nosuch/json HTTP/1.1"


def test_an_upload_the_engine_cuts_short_reports_the_engines_answer(tmp_path):
    """dockerd refusing an import mid-upload answers, then closes: the error carries its answer
    and how much was sent, not a bare broken pipe."""
    path = tmp_path / "d.sock"
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(path))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        conn.recv(65536)
        body = b'{"message":"write /run/linklab/docker/storage/tmp: no space left on device"}'
        conn.sendall(f"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        conn.shutdown(socket.SHUT_WR)
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    tar = tmp_path / "rootfs.tar"
    tar.write_bytes(b"\0" * (32 << 20))
    with pytest.raises(dapi.UploadCut) as e:
        dapi.Api(path, timeout=10).import_rootfs(tar, "linklab/base", "latest", ["CMD x"], timeout=10)
    t.join(5)
    assert e.value.answer is not None and e.value.answer[0] == 500
    msg = str(e.value)
    assert "no space left on device" in msg and "HTTP 500" in msg and "of 34 MB" in msg, msg


# ---- what a node becomes -------------------------------------------------------------------------

def test_container_config_has_no_docker_network_and_carries_the_labs_labels():
    node = lab().node("c2")
    cfg = ctr.config("containers", "ab12", "home1", node)
    assert cfg["Image"] == "linklab/base" and cfg["Hostname"] == "c2" and "Cmd" not in cfg  # the image's own
    assert cfg["Env"] == ["LAB_ROLE=server"]
    assert cfg["HostConfig"]["NetworkMode"] == "none"
    assert cfg["Labels"] == {"linklab.lab": "containers", "linklab.id": "ab12", "linklab.home": "home1",
                             "linklab.node": "c2", "linklab.spec": ctr.spec_hash(node)}
    assert ctr.mark_of(cfg["Labels"]) == Mark("containers", "ab12", "home1")
    assert ctr.mark_of({"maintainer": "someone"}) is None
    # Another image is another container; the same spec the same.
    other = node.model_copy(update={"container": node.container.model_copy(update={"image": "alpine"})})
    assert ctr.spec_hash(other) != ctr.spec_hash(node) == ctr.spec_hash(lab().node("c2"))


def test_container_nodes_are_hosts_of_the_container_kind():
    la = lab()
    assert [kinds.kind_of(n) for n in la.nodes] == ["container", "container", "host", "bridge"]
    assert la.node("c1").kind == "host"  # addresses, sysctls and names as a host's
    assert isinstance(kinds.REGISTRY["container"], kinds.REGISTRY["host"].__class__)


def test_a_container_that_exited_at_once_is_reported_with_its_logs():
    info = {"State": {"Running": False, "Pid": 0, "ExitCode": 1, "Error": ""}}
    msg = ctr.started_problem("ll-t-c1", info, "sleep: invalid time interval 'forever'\n")
    assert msg == "container ll-t-c1 exited at once (exit code 1):\nsleep: invalid time interval 'forever'"
    assert ctr.started_problem("ll-t-c1", {"State": {"Running": True, "Pid": 42}}, "") is None
    assert "printed nothing" in ctr.started_problem("x", {"State": {"Running": False, "ExitCode": 127}}, "")


def test_commands_enter_a_container_node_through_its_pid():
    where = runner.container_where("ll-t-c1", 4242)
    assert runner.netns_of(where) == "ll-t-c1" and runner.container_pid(where) == 4242
    assert runner.container_pid("ll-t-h1") is None and runner.netns_of("ll-t-h1") == "ll-t-h1"
    assert runner.netns_argv(["iperf3", "-s"], where) == [
        "nsenter", "--target=4242", "--mount", "--uts", "--ipc", "--net", "--", "iperf3", "-s"]


def test_status_shows_image_container_and_state():
    data = {"state": {"lab": "t", "status": "up", "kernel": "6.1", "placement": {"kind": "native"},
                      "topology": {"path": "t.yaml", "sha256": "ab" * 32},
                      "resolved": {"scale": 1.0, "scale_source": "topology"}},
            "live": {"nodes": {"c1": {"present": True, "netns": "ll-t-c1", "interfaces": [],
                                      "container": {"image": "linklab/base", "id": "0123456789ab", "state": "running"}}}}}
    assert "  c1: image linklab/base, container 0123456789ab, running" in render(data)


# ---- the kind against a fake engine --------------------------------------------------------------

class FakeApi:
    def __init__(self, containers=None, images_=()):
        self.c = dict(containers or {})
        self.imgs = set(images_)
        self.removed, self.pulled = [], []

    def inspect(self, name):
        return self.c.get(name)

    def remove(self, name):
        self.removed.append(name)
        return self.c.pop(name, None) is not None

    def containers(self, labels):
        return [{"Names": ["/" + n], "Labels": c["Config"]["Labels"]} for n, c in self.c.items()
                if all(k in c["Config"]["Labels"] for k in labels)]

    def image(self, name):
        return {"Id": "x"} if name in self.imgs else None

    def pull(self, image, timeout):
        self.pulled.append(image)
        raise dapi.ApiError(500, "dial tcp: lookup registry-1.docker.io: no such host", f"pulling {image}")


def owned_container(lab_name, lab_id, home, node="c1"):
    return {"Id": "f" * 64, "Config": {"Image": "linklab/base", "Labels": {
        "linklab.lab": lab_name, "linklab.id": lab_id, "linklab.home": home, "linklab.node": node}},
        "State": {"Running": True, "Pid": 99, "Status": "running"}}


def test_claim_refuses_a_container_of_that_name_that_is_not_this_labs(monkeypatch):
    la = lab()
    nodes = [n for n in la.nodes if n.container]
    me = Mark("containers", "id1", "home1")
    fake = FakeApi({"ll-containers-c1": owned_container("containers", "other", "home1")})
    monkeypatch.setattr(engine, "connect", lambda say=print: fake)
    with pytest.raises(StateError, match="ll-containers-c1 exists in linklab's engine but is not this lab's"):
        kinds.REGISTRY["container"].claim(la, nodes, {"id": "id1"}, me)
    fake.c["ll-containers-c1"] = owned_container("containers", "id1", "home1")
    got = kinds.REGISTRY["container"].claim(la, nodes, {"id": "id1"}, me)
    assert got["containers"] == ["ll-containers-c1", "ll-containers-c2"] and fake.removed == []


def test_down_removes_only_listed_containers_carrying_this_labs_labels(monkeypatch):
    fake = FakeApi({"ll-containers-c1": owned_container("containers", "id1", "home1"),
                    "ll-containers-c2": owned_container("containers", "id2", "home1", "c2"),  # a newer lab of that name
                    "webserver": {"Config": {"Labels": {}}, "State": {}}})
    monkeypatch.setattr(engine, "running", lambda: fake)
    owned = {"id": "id1", "home": "home1", "containers": ["ll-containers-c1", "ll-containers-c2"]}
    got = kinds.REGISTRY["container"].remove_all("containers", ["c1", "c2", "h1"], owned,
                                                 lambda n: f"ll-containers-{n}")
    assert got == ["container ll-containers-c1"]
    assert set(fake.c) == {"ll-containers-c2", "webserver"}


def test_clean_finds_containers_by_their_labels_only(monkeypatch):
    fake = FakeApi({"ll-a-c1": owned_container("a", "id1", "home1"), "webserver": {"Config": {"Labels": {}}}})
    monkeypatch.setattr(engine, "running", lambda: fake)
    kind = kinds.REGISTRY["container"]
    assert kind.marked() == {"container ll-a-c1": Mark("a", "id1", "home1")}
    assert kind.remove_marked(["container ll-a-c1"]) == ["container ll-a-c1"]
    assert set(fake.c) == {"webserver"}
    monkeypatch.setattr(engine, "running", lambda: None)  # no engine: nothing of ours can run
    assert kind.marked() == {} and kind.remove_marked(["container ll-a-c1"]) == []


def test_a_missing_image_is_named_with_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LINKLAB_IMAGES_DIR", str(tmp_path))
    fake = FakeApi()
    with pytest.raises(EnvironmentProblem) as e:
        images.ensure(fake, "linklab/base", say=lambda s: None)
    assert e.value.exit_code == 4 and "'linklab/base'" in str(e.value) and "make images" in e.value.hint
    with pytest.raises(EnvironmentProblem) as e:
        images.ensure(fake, "frr:9.1", say=lambda s: None)
    assert "no such host" in str(e.value) and f"{tmp_path}/frr_9.1.tar" in e.value.hint
    assert fake.pulled == ["linklab/base", "frr:9.1"]


def test_no_docker_exits_4_with_the_install_hint(monkeypatch):
    monkeypatch.setattr(engine, "running", lambda: None)
    monkeypatch.setattr(engine.shutil, "which", lambda name: None)
    with pytest.raises(EnvironmentProblem) as e:
        engine.connect(say=lambda s: None)
    assert e.value.exit_code == 4 and "docker.io" in e.value.hint


def test_the_engine_adds_nothing_to_the_machines_network_and_keeps_to_its_own_socket():
    argv = engine.argv()
    assert "--bridge=none" in argv and "--iptables=false" in argv and "--ip-masq=false" in argv
    assert f"--host=unix://{engine.SOCKET}" in argv and not any(a.startswith("--host=tcp") for a in argv)
    assert "--containerd-namespace=linklab" in argv
    assert f"--data-root={engine.STORAGE / 'data'}" in argv
    # Its own containerd, started first: dockerd would give one it starts only 15 s.
    assert f"--containerd={engine.CONTAINERD_SOCKET}" in argv
    assert f"--address={engine.CONTAINERD_SOCKET}" in engine.containerd_argv()


def test_a_saved_image_is_loaded_and_a_root_filesystem_imported(tmp_path):
    import io
    import tarfile

    def tar(path, names):
        with tarfile.open(path, "w") as t:
            for n in names:
                data = b"{}"
                info = tarfile.TarInfo(n)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        return path

    assert images._is_saved_image(tar(tmp_path / "saved.tar", ["manifest.json", "abc/layer.tar"]))
    assert not images._is_saved_image(tar(tmp_path / "rootfs.tar", ["./etc/os-release", "./bin/sh"]))
    assert not images._is_saved_image(tmp_path / "absent.tar")


def test_engine_daemons_are_found_by_their_socket_and_storage_is_never_released_under_one(tmp_path, monkeypatch):
    """The engine's daemons are the dockerd and containerd whose command lines name its sockets,
    recorded or not; a dockerd of another socket, or another program naming the socket, is
    left alone. The storage tmpfs is released only once none of them runs."""
    import subprocess
    monkeypatch.setattr(engine, "SOCKET", tmp_path / "docker.sock")
    monkeypatch.setattr(engine, "CONTAINERD_SOCKET", tmp_path / "containerd.sock")

    def fake(name: str, *args: str) -> subprocess.Popen:
        # A script's process is named after the script (/proc/PID/comm): a stand-in daemon.
        script = tmp_path / name
        script.parent.mkdir(exist_ok=True)
        script.write_text("#!/bin/sh\nsleep 60\n")
        script.chmod(0o755)
        return subprocess.Popen([str(script), *args], start_new_session=True)

    ours = [fake("dockerd", f"--host=unix://{engine.SOCKET}"), fake("containerd", f"--address={engine.CONTAINERD_SOCKET}")]
    theirs = [fake("other/dockerd", f"--host=unix://{tmp_path}/other.sock"), fake("client", f"--host=unix://{engine.SOCKET}")]
    unmounted: list = []
    monkeypatch.setattr(engine.os.path, "ismount", lambda p: True)
    monkeypatch.setattr(engine.ctypes, "CDLL", lambda *a, **k: type("L", (), {"umount2": lambda self, *a: unmounted.append(a)})())
    try:
        deadline = engine.time.monotonic() + 5
        while engine.time.monotonic() < deadline and not all(engine.daemons().values()):
            engine.time.sleep(0.05)
        assert engine.daemons() == {"dockerd": [ours[0].pid], "containerd": [ours[1].pid]}
        real_stop = engine.procs.stop
        monkeypatch.setattr(engine.procs, "stop", lambda pids, grace: None)  # one the kernel could not kill
        assert engine.stop(release_storage=True) is True and unmounted == []
        monkeypatch.setattr(engine.procs, "stop", real_stop)
        assert engine.stop(release_storage=True) is True and len(unmounted) == 1
        assert all(p.wait(5) is not None for p in ours)
        assert all(p.poll() is None for p in theirs), "a process that is not this engine's was stopped"
        assert engine.daemons() == {"dockerd": [], "containerd": []} and engine.stop() is False
    finally:
        for p in ours + theirs:
            p.kill()
            p.wait()


def test_a_busy_engine_is_waited_for_not_stopped_and_one_without_its_storage_is_not(tmp_path, monkeypatch):
    """A dockerd of ours on its storage that misses pings is given time (stopping it would stop
    its containers); without its storage it is not waited for."""
    import subprocess
    monkeypatch.setattr(engine, "SOCKET", tmp_path / "docker.sock")
    script = tmp_path / "dockerd"
    script.write_text("#!/bin/sh\nsleep 60\n")
    script.chmod(0o755)
    daemon = subprocess.Popen([str(script), f"--host=unix://{engine.SOCKET}"], start_new_session=True)
    answers = iter([False, False, True])
    monkeypatch.setattr(engine.Api, "ping", lambda self: next(answers))
    mounted = [True]
    monkeypatch.setattr(engine.os.path, "ismount", lambda p: mounted[0])
    monkeypatch.setattr(engine, "_start", lambda *a: pytest.fail("started a second engine beside a busy one"))
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not engine.daemons()["dockerd"]:
            time.sleep(0.05)
        engine.SOCKET.touch()
        assert engine.connect(say=lambda s: None).socket_path == str(engine.SOCKET)  # the third ping answered
        assert daemon.poll() is None
        mounted[0] = False  # its storage gone: not this engine's any more, nothing to wait for
        t0 = time.monotonic()
        assert engine._busy(patience=30) is None and time.monotonic() - t0 < 1
    finally:
        daemon.kill()
        daemon.wait()


# ---- binds: relative to the topology file, as containerlab resolves them -----------------------

def _binds_topology(where: Path, binds: list[str]) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    p = where / "lab.yaml"
    p.write_text("name: binds\nhosts:\n  c1:\n    kind: container\n    image: linklab/base\n"
                 f"    binds: {json.dumps(binds)}\n  h1: {{}}\nlinks:\n  - {{endpoints: [c1, h1]}}\n")
    return p


def test_relative_binds_are_taken_from_the_topology_files_directory(tmp_path, monkeypatch):
    topo = _binds_topology(tmp_path / "lab", ["r1/frr.conf:/etc/frr/frr.conf", "./data/../shared:/shared:ro",
                                              "/srv/x:/x:rw", "~/notes:/notes"])
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)  # not where the file is: what counts is the file's directory
    want = [f"{tmp_path}/lab/r1/frr.conf:/etc/frr/frr.conf", f"{tmp_path}/lab/shared:/shared:ro", "/srv/x:/x:rw",
            f"{tmp_path}/home/notes:/notes"]
    assert load_topology("lab/lab.yaml").hosts["c1"].binds == want
    lab = resolve(load_topology(topo), Context())
    assert lab.node("c1").container.binds == want
    # The same file read as though it lay elsewhere (an import validated before it is saved there)
    assert load_topology(topo, base_dir="/elsewhere").hosts["c1"].binds[0] == "/elsewhere/r1/frr.conf:/etc/frr/frr.conf"


def test_a_bind_whose_host_path_is_missing_is_refused_before_anything_is_made(tmp_path, monkeypatch):
    (tmp_path / "lab" / "r1").mkdir(parents=True)
    (tmp_path / "lab" / "r1" / "frr.conf").write_text("")
    topo = _binds_topology(tmp_path / "lab", ["r1/frr.conf:/etc/frr/frr.conf", "r1/daemons:/etc/frr/daemons:ro"])
    lab = resolve(load_topology(topo), Context())
    asked = []
    monkeypatch.setattr(ctr.engine, "connect", lambda *a: asked.append("engine"))  # never reached
    problems = kinds.REGISTRY["container"].check(lab, lab.node("c1"))
    assert problems == [f"hosts.c1.binds: {tmp_path}/lab/r1/daemons does not exist (bind {tmp_path}/lab/r1/daemons:"
                        "/etc/frr/daemons:ro; a relative path is from the topology file's directory)"]
    assert asked == []
