"""Framing between the host client and the lab VM agent: pure functions, no VM, no root."""

from __future__ import annotations

import json
import os
import sys

import pytest

from linklab.vm import protocol as P


def roundtrip(*frames: dict) -> list[dict]:
    return P.FrameReader().feed(b"".join(P.encode(f) for f in frames))


def test_request_roundtrip():
    req = P.request(["linklab", "sweep", "--x", "ü"], "/work/main", {"LINKLAB_X": "1"}, 12.5)
    [back] = roundtrip(req)
    assert back == req
    assert P.parse_request(back) == P.Request(["linklab", "sweep", "--x", "ü"], "/work/main", {"LINKLAB_X": "1"}, 12.5,
                                              warm=False, netns=None)


def test_request_in_a_namespace_roundtrips_and_is_never_warm():
    [back] = roundtrip(P.request(["ping", "-c1", "h2"], "/", netns="ll-bond2-h1"))
    assert P.parse_request(back).netns == "ll-bond2-h1"
    with pytest.raises(P.ProtocolError):
        P.request([sys.executable, "-m", "linklab", "status"], "/", warm=True, netns="ll-bond2-h1")


def test_request_stringifies_argv_and_rejects_empty():
    assert P.request(["sleep", 5], "/")["argv"] == ["sleep", "5"]
    with pytest.raises(P.ProtocolError):
        P.request([], "/")


@pytest.mark.parametrize("bad", [
    {"t": "req", "argv": [], "cwd": "/"},
    {"t": "req", "argv": "ls -l", "cwd": "/"},
    {"t": "req", "argv": ["ls", 1], "cwd": "/"},
    {"t": "req", "argv": ["ls"], "cwd": ""},
    {"t": "req", "argv": ["ls"], "cwd": "/", "env": {"A": 1}},
    {"t": "req", "argv": ["ls"], "cwd": "/", "timeout": -1},
    {"t": "req", "argv": ["ls"], "cwd": "/", "timeout": "5"},
    {"t": "req", "argv": ["ls"], "cwd": "/", "netns": "../../proc/1/ns/net"},
    {"t": "req", "argv": ["ls"], "cwd": "/", "netns": ""},
])
def test_parse_request_rejects(bad):
    with pytest.raises(P.ProtocolError):
        P.parse_request(bad)


def test_every_frame_is_one_line():
    for frame in (P.hello("n"), P.ready("n", {"a": "x\ny"}), P.output("out", b"a\nb\n"), P.exit_(3),
                  P.signal("INT"), P.error("two\nlines"), P.shutdown(), P.bye()):
        data = P.encode(frame)
        assert data.endswith(b"\n") and data.count(b"\n") == 1


def test_partial_reads_byte_by_byte():
    frames = [P.hello("abc"), P.output("err", b"x" * 1000), P.exit_(0)]
    stream = b"".join(P.encode(f) for f in frames)
    reader = P.FrameReader()
    got = []
    for i in range(len(stream)):
        got += reader.feed(stream[i : i + 1])
    assert got == frames
    assert reader.pending == 0


def test_split_across_arbitrary_chunks():
    frames = [P.output("out", os.urandom(5000)) for _ in range(5)] + [P.exit_(7)]
    stream = b"".join(P.encode(f) for f in frames)
    reader = P.FrameReader()
    got, i = [], 0
    for size in (1, 7, 4096, 3, 65536):
        got += reader.feed(stream[i : i + size])
        i += size
    got += reader.feed(stream[i:])
    assert got == frames


def test_binary_output_survives():
    data = bytes(range(256)) * 4 + b"\n\r\x00\xff"
    [frame] = roundtrip(P.output("out", data))
    assert frame["t"] == "out"
    assert P.output_data(frame) == data


def test_output_frames_chunk_large_reads():
    data = os.urandom(P.CHUNK * 2 + 10)
    frames = P.output_frames("err", data)
    assert len(frames) == 3
    assert all(f["t"] == "err" for f in frames)
    assert b"".join(P.output_data(f) for f in frames) == data


def test_bad_output_frame():
    with pytest.raises(P.ProtocolError):
        P.output_data({"t": "out", "d": "not base64!!"})
    with pytest.raises(P.ProtocolError):
        P.output("tty", b"")


def test_signal_frames():
    for name in ("INT", "TERM", "KILL"):
        [frame] = roundtrip(P.signal(name))
        assert frame == {"t": "sig", "sig": name}
    with pytest.raises(P.ProtocolError):
        P.signal("HUP")


def test_handshake_frames():
    [h, r] = roundtrip(P.hello("n1"), P.ready("n1", {"kernel_release": "6.1.0", "cpus": 2}))
    assert h == {"t": "hello", "nonce": "n1"}
    assert r["nonce"] == "n1" and r["info"]["cpus"] == 2


def test_garbage_is_dropped_and_reported_not_raised():
    reader = P.FrameReader()
    stream = b"not json\n[1, 2]\n" + json.dumps({"no": "type"}).encode() + b"\n" + P.encode(P.bye())
    assert reader.feed(stream) == [P.bye()]  # frames after garbage in the same read are not lost
    assert len(reader.take_dropped()) == 3
    assert reader.take_dropped() == []
    with pytest.raises(P.ProtocolError):
        P.encode({"no": "type"})
    with pytest.raises(P.ProtocolError):
        P.decode(b"[]")


def test_resync_after_a_cut_off_frame():
    """A client died mid-frame; the next client's hello must still get through."""
    reader = P.FrameReader()
    cut = P.encode(P.request(["sleep", "60"], "/"))[:17]
    assert reader.feed(cut) == []
    assert reader.feed(P.encode(P.hello("n2")) + P.encode(P.exit_(0))) == [P.hello("n2"), P.exit_(0)]
    assert reader.take_dropped() == ["17 bytes of a cut-off frame"]


def test_blank_lines_are_ignored():
    assert P.FrameReader().feed(b"\n\n" + P.encode(P.bye()) + b"\n") == [P.bye()]


def test_reset_drops_a_partial_frame():
    reader = P.FrameReader()
    assert reader.feed(P.encode(P.exit_(1))[:5]) == []
    reader.reset()
    assert reader.feed(P.encode(P.exit_(2))) == [P.exit_(2)]


def test_unterminated_frame_is_bounded(monkeypatch):
    monkeypatch.setattr(P, "MAX_FRAME", 100)
    reader = P.FrameReader()
    assert reader.feed(b"x" * 150) == []
    assert reader.pending == 0 and reader.take_dropped()
    assert reader.feed(P.encode(P.bye())) == [P.bye()]


@pytest.mark.parametrize("rc,code", [(0, 0), (3, 3), (-2, 130), (-9, 137), (-15, 143)])
def test_returncode_to_exit(rc, code):
    assert P.returncode_to_exit(rc) == code
