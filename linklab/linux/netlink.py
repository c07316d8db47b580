"""Netlink handles into lab namespaces, and new namespaces, without a process each.

pyroute2 0.9.7 forks a child process to open a socket inside a namespace (`IPRoute(netns=)`)
and another to create one (`netns.create`). Under software emulation a fork of this Python
costs tens of milliseconds, many of them per build (bench/README.md#netlink-and-files). Here the
calling thread enters the namespace (setns(2) changes only the calling thread), opens the
socket or makes the namespace, and comes back: a netlink socket stays bound to the namespace it
was opened in.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager

from pyroute2 import IPRoute, netns
from pyroute2.netlink import (NETLINK_ROUTE, NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REQUEST,
                              NLMSG_DONE, NLMSG_ERROR)
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl import RTM_GETLINK, RTM_GETQDISC, RTM_NEWADDR, RTM_NEWLINK, RTM_NEWQDISC, RTM_SETLINK
from pyroute2.netlink.rtnl.ifaddrmsg import IFA_F_NODAD
from pyroute2.netlink.rtnl.ifinfmsg import IFF_UP
from pyroute2.netlink.rtnl.ndmsg import NUD_NOARP, NUD_PERMANENT

from linklab.errors import EnvironmentProblem, LinklabError
from linklab.runner import netns_of

CLONE_NEWNET = 0x40000000

# The errnos by which the kernel says it lacks something rather than refusing this request: a
# module it was built without or has not loaded (EOPNOTSUPP: a bond without `bonding`), or the
# right to ask (not root). The machine's lack (exit 4); any other refusal fails the operation.
LACKING = frozenset({errno.EOPNOTSUPP, errno.EPROTONOSUPPORT, errno.EAFNOSUPPORT, errno.EPERM, errno.EACCES})


def refusal(e: NetlinkError, what: str, hint: str | None = None) -> LinklabError:
    """A NetlinkError as the error users see instead of a traceback: `what` (the object asked
    for, e.g. "r1: bond lag0 of link lag") the kernel refused, with the errno's meaning, name
    and number, what a batch said of each request it sent, and what to do about it."""
    code = getattr(e, "code", 0) or 0
    meaning = os.strerror(code) if code else "no errno"
    said = str(e.args[1]) if len(e.args) > 1 and e.args[1] else ""
    name = "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode.get(code)  # iproute2's name, not ENOTSUP
    text = f"{what}: the kernel refused it: {meaning} (errno {code}{', ' + name if name else ''})"
    if said and said != meaning:
        text += f": {said}"
    if code in (errno.EPERM, errno.EACCES):
        why = "building a lab takes root (CAP_NET_ADMIN): run linklab as root"
    elif code in LACKING:
        why = ("this kernel lacks what it takes (a module not built or not loaded; `linklab doctor` lists what "
               "it has): linklab runs a lab that needs it in the lab VM (`linklab up` without --native)")
    else:
        why = None
    hint = "; ".join(h for h in (hint, why) if h) or None
    return (EnvironmentProblem if code in LACKING else LinklabError)(text, hint=hint)


@contextmanager
def refused(what: str, hint: str | None = None) -> Iterator[None]:
    """Run the block; a NetlinkError in it becomes `refusal(e, what, hint)`."""
    try:
        yield
    except NetlinkError as e:
        raise refusal(e, what, hint) from e


def _setns(fd: int) -> None:
    if netns._get_libc(None).syscall(netns.__NR_setns, fd, CLONE_NEWNET) != 0:
        import ctypes
        raise OSError(ctypes.get_errno(), "setns failed")


@contextmanager
def _inside(target_fd: int | None) -> Iterator[None]:
    """Run the block in the namespace `target_fd` (None: a new one this thread unshares), then
    come back to the thread's own namespace whatever happened."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        if target_fd is not None:
            _setns(target_fd)
        yield
    finally:
        _setns(home)
        os.close(home)


def _path(name: str) -> str:
    # A container node's place ("ns@pid") names its namespace too.
    return os.path.join(netns.NETNS_RUN_DIR, netns_of(name))


@contextmanager
def _inside_named(name: str) -> Iterator[None]:
    """Run the block in the existing namespace `name` (FileNotFoundError if there is none)."""
    fd = os.open(_path(name), os.O_RDONLY)
    try:
        with _inside(fd):
            yield
    finally:
        os.close(fd)


def route_socket(name: str | None) -> socket.socket:
    """An rtnetlink socket that lives in the existing namespace `name` (FileNotFoundError if it
    does not exist: a typo must not create one); it stays bound to that namespace. None: this
    thread's own namespace."""
    if name is None:
        return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE)
    with _inside_named(name):
        return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_ROUTE)


def iproute(name: str) -> IPRoute:
    """An IPRoute whose socket lives in the existing namespace `name` (see route_socket)."""
    return IPRoute(fileno=route_socket(name).detach())


def flush_neighbours(name: str) -> int:
    """What `ip neigh flush all` does in the existing namespace `name`: every neighbour entry,
    IPv4 and IPv6, is deleted but those ip leaves alone unless asked (ip-neighbour(8)): entries
    set by hand (permanent) and those of links without ARP. Returns how many went."""
    gone = 0
    with iproute(name) as ipr:
        for entry in ipr.neigh("dump"):
            dst = entry.get_attr("NDA_DST")
            if entry["state"] & (NUD_PERMANENT | NUD_NOARP) or dst is None:
                continue
            try:
                ipr.neigh("del", dst=dst, ifindex=entry["ifindex"], family=entry["family"])
                gone += 1
            except NetlinkError as e:
                if e.code != errno.ENOENT:  # gone already (it expired, or the kernel replaced it)
                    raise
    return gone


def create(name: str) -> None:
    """A new named namespace, as `ip netns add` makes it (pyroute2's own steps, in this
    thread instead of a child process)."""
    libc = netns._get_libc(None)
    with _inside(None):
        if libc.unshare(CLONE_NEWNET) != 0:
            import ctypes
            raise OSError(ctypes.get_errno(), f"unshare failed making namespace {name}")
        # pid names whose namespace to bind: this thread's new one (/proc/self is the main thread's).
        netns._create(name, libc, pid="thread-self")


def attach(name: str, pid: int) -> None:
    """Name the network namespace process `pid` is in (a container's), as `ip netns attach`."""
    netns._create(name, netns._get_libc(None), pid=str(pid))


def same_namespace(name: str, pid: int) -> bool:
    """Whether the named namespace is the one process `pid` is in."""
    try:
        a, b = os.stat(_path(name)), os.stat(f"/proc/{pid}/ns/net")
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def is_placeholder(name: str) -> bool:
    """The namespace's file exists but no namespace is mounted on it: what a kill between
    `create`'s two steps (make the file, bind the namespace onto it) leaves. A mounted one is on
    nsfs, another device than the directory's."""
    try:
        return os.stat(_path(name)).st_dev == os.stat(netns.NETNS_RUN_DIR).st_dev
    except OSError:
        return False


def remove_placeholder(name: str) -> None:
    if is_placeholder(name):
        os.unlink(_path(name))


def read_proc_net(name: str, files: list[str]) -> dict[str, str]:
    """The text of /proc/net/<file> as the namespace `name` sees it, read by this thread from
    inside it (/proc/thread-self/net follows the thread's namespace; /proc/self/net the main
    thread's). A file the kernel lacks (no IPv6: no snmp6) reads as "". Costs no process: `nstat`
    in a namespace costs tens of times more under emulation (bench/README.md#netlink-and-files)."""
    out: dict[str, str] = {}
    with _inside_named(name):
        for f in files:
            try:
                with open(f"/proc/thread-self/net/{f}") as fh:
                    out[f] = fh.read()
            except FileNotFoundError:
                out[f] = ""
    return out


_NLMSG_HDR = struct.Struct("IHHII")  # struct nlmsghdr: length, type, flags, sequence, port
_IFINFOMSG = struct.Struct("BxHiII")  # struct ifinfomsg: family, type, index, flags, change
_IFADDRMSG = struct.Struct("BBBBI")  # struct ifaddrmsg: family, prefixlen, flags, scope, index
_NLA = struct.Struct("HH")  # struct nlattr: length (header and payload, unpadded), type
_U32 = struct.Struct("I")
_ERRNO = struct.Struct("i")  # an NLMSG_ERROR's first field: 0 (an ack) or -errno
# linux/if_link.h, linux/veth.h, linux/if_addr.h
IFLA_IFNAME, IFLA_MTU, IFLA_MASTER, IFLA_LINKINFO, IFLA_IFALIAS, IFLA_NET_NS_FD = 3, 4, 10, 18, 20, 28
IFLA_GSO_MAX_SIZE = 41
IFLA_INFO_KIND, IFLA_INFO_DATA = 1, 2
VETH_INFO_PEER = 1
IFLA_BR_FORWARD_DELAY, IFLA_BR_STP_STATE = 1, 5
IFA_ADDRESS, IFA_LOCAL = 1, 2
IFLA_STATS64 = 23
# struct rtnl_link_stats64's first eight counters (linux/if_link.h)
STATS64_FIELDS = ("rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors", "rx_dropped", "tx_dropped")
_STATS64 = struct.Struct("8Q")
# linux/rtnetlink.h, linux/pkt_sched.h, linux/gen_stats.h
_TCMSG = struct.Struct("BxxxiIII")  # struct tcmsg: family, ifindex, handle, parent, info
TCA_KIND, TCA_OPTIONS, TCA_STATS2 = 1, 2, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_APP = 1, 3, 4
_GNET_BASIC = struct.Struct("QI")  # struct gnet_stats_basic: bytes, packets
_GNET_QUEUE = struct.Struct("5I")  # struct gnet_stats_queue: qlen, backlog, drops, requeues, overlimits


def _message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    """A request: nlmsghdr (NLM_F_REQUEST added) + body."""
    return _NLMSG_HDR.pack(_NLMSG_HDR.size + len(body), kind, NLM_F_REQUEST | flags, seq, 0) + body


def _errno(data: bytes, off: int) -> int:
    """The errno an NLMSG_ERROR message at `off` carries (0: an ack)."""
    return -_ERRNO.unpack_from(data, off + _NLMSG_HDR.size)[0]


def _nla(kind: int, payload: bytes) -> bytes:
    n = _NLA.size + len(payload)
    return _NLA.pack(n, kind) + payload + b"\0" * (-n % 4)


def _nla_str(kind: int, value: str) -> bytes:
    return _nla(kind, value.encode() + b"\0")


def _nla_u32(kind: int, value: int) -> bytes:
    return _nla(kind, _U32.pack(value))


def _ifinfo(index: int = 0, up: bool | None = None) -> bytes:
    """An ifinfomsg; `up` set: IFF_UP in `change`, and in `flags` when True."""
    flags, change = ((IFF_UP if up else 0), IFF_UP) if up is not None else (0, 0)
    return _IFINFOMSG.pack(socket.AF_UNSPEC, 0, index, flags, change)


def _attrs(data: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """The netlink attributes (type, payload) between start and end of a message; a malformed
    one ends the walk (a reply cut short yields what came before it)."""
    off = start
    while off + 4 <= end:
        alen, atype = _NLA.unpack_from(data, off)
        if alen < 4:
            return
        yield atype & 0x3FFF, data[off + 4:off + alen]  # the top bits are the nested/byte-order flags
        off += (alen + 3) & ~3


def _string(value: bytes) -> str:
    return value.split(b"\0", 1)[0].decode(errors="replace")


class Batch:
    """Link requests to one namespace, sent back to back on one socket and acknowledged
    together (`send`). pyroute2's IPRoute runs an asyncio loop per request (its synchronous
    API); a message built here and pipelined costs a fraction (bench/README.md#netlink-and-files).
    Interfaces are named, not looked up: the kernel resolves IFLA_IFNAME when
    the index is 0, so a fresh build needs no index until it enslaves a port.

    Requests run in order; every failure is collected and `send` raises one NetlinkError
    naming each failed request (errno and what it was)."""

    def __init__(self, name: str):
        self.name = name
        self._msgs: list[tuple[int, str, bytes]] = []
        self._fds: list[int] = []

    def veth(self, ifname: str, peer: str, peer_ns: str, *, up: bool = True, mtu: int | None = None,
             index: int = 0, peer_index: int = 0) -> None:
        """A veth pair: `ifname` here (up at once when asked), `peer` in namespace `peer_ns`, down:
        the kernel brings a new peer up before the pair is joined, and a veth without its peer
        refuses to open (ENOTCONN), so the peer is brought up by a later request. `index`,
        `peer_index`: the interface indexes to create them with (0: the kernel picks), so the
        caller knows them without asking."""
        fd = os.open(_path(peer_ns), os.O_RDONLY)
        self._fds.append(fd)
        mtu_attr = _nla_u32(IFLA_MTU, mtu) if mtu else b""
        peer_msg = _ifinfo(peer_index) + _nla_str(IFLA_IFNAME, peer) + _nla_u32(IFLA_NET_NS_FD, fd) + mtu_attr
        info = _nla_str(IFLA_INFO_KIND, "veth") + _nla(IFLA_INFO_DATA, _nla(VETH_INFO_PEER, peer_msg))
        self._push(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, f"add veth {ifname} (peer {peer} in {peer_ns})",
                   _ifinfo(index, up) + _nla_str(IFLA_IFNAME, ifname) + mtu_attr + _nla(IFLA_LINKINFO, info))

    def bridge(self, ifname: str, *, stp: bool, forward_delay: int = 0, index: int = 0) -> None:
        data = _nla_u32(IFLA_BR_STP_STATE, int(stp)) + _nla_u32(IFLA_BR_FORWARD_DELAY, forward_delay)
        info = _nla_str(IFLA_INFO_KIND, "bridge") + _nla(IFLA_INFO_DATA, data)
        self._push(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, f"add bridge {ifname}",
                   _ifinfo(index) + _nla_str(IFLA_IFNAME, ifname) + _nla(IFLA_LINKINFO, info))

    def set(self, ifname: str, *, up: bool | None = None, mtu: int | None = None, alias: str | None = None,
            master: int | None = None, gso_max_size: int | None = None) -> None:
        """Change an interface named `ifname` (master: the index of the bridge or bond;
        gso_max_size: the biggest GSO packet its senders may hand it)."""
        attrs = _nla_str(IFLA_IFNAME, ifname)
        attrs += _nla_u32(IFLA_MTU, mtu) if mtu is not None else b""
        attrs += _nla_str(IFLA_IFALIAS, alias) if alias is not None else b""
        attrs += _nla_u32(IFLA_MASTER, master) if master is not None else b""
        attrs += _nla_u32(IFLA_GSO_MAX_SIZE, gso_max_size) if gso_max_size is not None else b""
        what = ", ".join(f"{k}={v}" for k, v in (("up", up), ("mtu", mtu), ("alias", alias), ("master", master),
                                                  ("gso_max_size", gso_max_size)) if v is not None)
        self._push(RTM_SETLINK, 0, f"set {ifname} {what}", _ifinfo(0, up) + attrs)

    def addr(self, index: int, address: str, prefixlen: int, *, nodad: bool = False) -> None:
        """An address on interface `index` (IPv4: local and address alike, as `ip addr add` does)."""
        ip = ipaddress.ip_address(address)
        family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
        body = _IFADDRMSG.pack(family, prefixlen, IFA_F_NODAD if nodad else 0, 0, index)
        if ip.version == 4:
            body += _nla(IFA_LOCAL, ip.packed)
        body += _nla(IFA_ADDRESS, ip.packed)
        self._push(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, f"add address {address}/{prefixlen} on index {index}", body)

    def fifo_limit(self, index: int, handle: int, parent: int, limit: int, kind: str = "bfifo") -> None:
        """Change the limit of the FIFO qdisc `handle` under `parent` on interface `index` in place
        (what `tc qdisc change ... bfifo limit N` sends: no create flag, so an existing qdisc is
        changed, and its queued packets stay); options: struct tc_fifo_qopt, one u32."""
        body = _TCMSG.pack(socket.AF_UNSPEC, index, handle, parent, 0)
        body += _nla_str(TCA_KIND, kind) + _nla(TCA_OPTIONS, _U32.pack(limit))
        self._push(RTM_NEWQDISC, 0, f"change {kind} {handle:#x} on index {index}: limit {limit}", body)

    def __len__(self) -> int:
        return len(self._msgs)

    def _push(self, kind: int, flags: int, what: str, body: bytes) -> None:
        """Messages are packed here with struct: pyroute2's message classes take many times
        longer to encode one, and a large lab sends hundreds (bench/README.md#netlink-and-files)."""
        seq = len(self._msgs) + 1
        self._msgs.append((seq, what, _message(kind, NLM_F_ACK | flags, seq, body)))

    def send(self) -> None:
        if not self._msgs:
            return
        try:
            with route_socket(self.name) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                sock.bind((0, 0))
                errors = _pipeline(sock, self._msgs)
        finally:
            for fd in self._fds:
                os.close(fd)
            self._fds, msgs, self._msgs = [], self._msgs, []
        if errors:
            whats = dict((seq, what) for seq, what, _ in msgs)
            first = errors[0][1]
            raise NetlinkError(first, "; ".join(f"{whats[s]}: {os.strerror(e)}" for s, e in errors)
                               + f" (namespace {self.name})")


def _pipeline(sock: socket.socket, msgs: list[tuple[int, str, bytes]]) -> list[tuple[int, int]]:
    """Send every message, then read one ack (NLMSG_ERROR, 0 = success) per message; return the
    failures as (sequence number, errno). Sent in chunks the socket buffers can hold."""
    errors: list[tuple[int, int]] = []
    chunk = 64
    for start in range(0, len(msgs), chunk):
        part = msgs[start:start + chunk]
        sock.sendall(b"".join(data for _, _, data in part))
        want = {seq for seq, _, _ in part}
        while want:
            data = sock.recv(1 << 16)
            off = 0
            while off + _NLMSG_HDR.size <= len(data):
                length, kind, _flags, seq, _pid = _NLMSG_HDR.unpack_from(data, off)
                if kind == NLMSG_ERROR and seq in want:
                    if code := _errno(data, off):
                        errors.append((seq, code))
                    want.discard(seq)
                off += max(length, _NLMSG_HDR.size)
    return errors


def read_alias(name: str, index: int) -> str | None:
    """IFLA_IFALIAS of interface `index` in namespace `name` (None: no alias, no such interface
    or namespace). One raw RTM_GETLINK, its reply's attributes walked here: `down` reads the
    loopback mark of every namespace it removes, and an IPRoute per namespace costs far more
    (bench/README.md#netlink-and-files)."""
    try:
        sock = route_socket(name)
    except OSError:
        return None
    with sock:
        sock.bind((0, 0))
        sock.send(_message(RTM_GETLINK, 0, 1, _ifinfo(index)))
        return link_alias(sock.recv(1 << 16))


def link_alias(reply: bytes) -> str | None:
    """Pure: the IFLA_IFALIAS of an RTM_NEWLINK reply (None for an error reply or no alias)."""
    if len(reply) < _NLMSG_HDR.size:
        return None
    length, kind = _NLMSG_HDR.unpack_from(reply, 0)[:2]
    if kind != RTM_NEWLINK:
        return None
    for atype, value in _attrs(reply, _NLMSG_HDR.size + _IFINFOMSG.size, min(length, len(reply))):
        if atype == IFLA_IFALIAS:
            return _string(value)
    return None


def _dump(name: str | None, kind: int, body: bytes, parse) -> list[dict]:
    """One raw dump request in namespace `name`; `parse` (pure) turns each recv() into
    (finished, items)."""
    out: list[dict] = []
    with route_socket(name) as sock:
        sock.bind((0, 0))
        sock.send(_message(kind, NLM_F_DUMP, 1, body))
        while True:
            done, got = parse(sock.recv(1 << 20))
            out += got
            if done:
                return out


def _replies(data: bytes, kind: int, what: str) -> tuple[bool, list[tuple[int, int]]]:
    """One recv() of a dump -> (it ended with NLMSG_DONE, (offset, length) of each `kind` message)."""
    found: list[tuple[int, int]] = []
    off = 0
    while off + _NLMSG_HDR.size <= len(data):
        length, mtype = _NLMSG_HDR.unpack_from(data, off)[:2]
        if length < _NLMSG_HDR.size:
            break
        if mtype == NLMSG_DONE:
            return True, found
        if mtype == NLMSG_ERROR:
            raise NetlinkError(_errno(data, off), f"{what} dump failed")
        if mtype == kind:
            found.append((off, length))
        off += (length + 3) & ~3
    return False, found


def links(name: str | None) -> list[dict]:
    """Every interface of namespace `name`: index, ifname, mtu, up (IFF_UP), master index, kind
    (IFLA_INFO_KIND: veth, bond...; None for a device without one, lo) and the 64-bit counters
    (stats64: STATS64_FIELDS). One raw RTM_GETLINK dump with only these
    attributes picked out of each reply: pyroute2 decodes every attribute of every link
    (bench/README.md#netlink-and-files), and a build reads each namespace's links twice."""
    return _dump(name, RTM_GETLINK, _ifinfo(), parse_link_dump)


def parse_link_dump(data: bytes) -> tuple[bool, list[dict]]:
    """Pure: one recv() of an RTM_GETLINK dump -> (dump finished, the links in it)."""
    def link(off: int, length: int) -> dict:
        _family, _type, index, flags, _change = _IFINFOMSG.unpack_from(data, off + _NLMSG_HDR.size)
        out = {"index": index, "up": bool(flags & IFF_UP), "ifname": None, "mtu": None, "master": None, "kind": None,
               "stats64": None}
        for atype, value in _attrs(data, off + _NLMSG_HDR.size + _IFINFOMSG.size, off + length):
            if atype == IFLA_IFNAME:
                out["ifname"] = _string(value)
            elif atype in (IFLA_MTU, IFLA_MASTER):
                out["mtu" if atype == IFLA_MTU else "master"] = _U32.unpack_from(value)[0]
            elif atype == IFLA_LINKINFO:
                out["kind"] = next((_string(v) for t, v in _attrs(value, 0, len(value)) if t == IFLA_INFO_KIND), None)
            elif atype == IFLA_STATS64 and len(value) >= _STATS64.size:
                out["stats64"] = dict(zip(STATS64_FIELDS, _STATS64.unpack_from(value)))
        return out
    done, found = _replies(data, RTM_NEWLINK, "link")
    return done, [link(off, length) for off, length in found]


def qdiscs(name: str | None) -> list[dict]:
    """Every qdisc of namespace `name` with its counters: ifindex, handle, parent, kind, and
    TCA_STATS2's bytes, packets, drops, overlimits, requeues, qlen, backlog and the raw bytes of
    its extended statistics, xstats (None when it has no stats). One raw
    RTM_GETQDISC dump: pyroute2 decodes each qdisc's options too."""
    return _dump(name, RTM_GETQDISC, _TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0), parse_qdisc_dump)


def parse_qdisc_dump(data: bytes) -> tuple[bool, list[dict]]:
    """Pure: one recv() of an RTM_GETQDISC dump -> (dump finished, the qdiscs in it)."""
    def qdisc(off: int, length: int) -> dict:
        _family, ifindex, handle, parent, _info = _TCMSG.unpack_from(data, off + _NLMSG_HDR.size)
        out: dict = {"ifindex": ifindex, "handle": handle, "parent": parent, "kind": None, "stats": None}
        for atype, value in _attrs(data, off + _NLMSG_HDR.size + _TCMSG.size, off + length):
            if atype == TCA_KIND:
                out["kind"] = _string(value)
            elif atype == TCA_STATS2:
                stats = {}
                for stype, sval in _attrs(value, 0, len(value)):
                    if stype == TCA_STATS_BASIC and len(sval) >= _GNET_BASIC.size:
                        stats.update(zip(("bytes", "packets"), _GNET_BASIC.unpack_from(sval)))
                    elif stype == TCA_STATS_QUEUE and len(sval) >= _GNET_QUEUE.size:
                        stats.update(zip(("qlen", "backlog", "drops", "requeues", "overlimits"), _GNET_QUEUE.unpack_from(sval)))
                    elif stype == TCA_STATS_APP:
                        stats["xstats"] = bytes(sval)  # the qdisc's own statistics (linklab/linux/xstats.py)
                out["stats"] = stats
        return out
    done, found = _replies(data, RTM_NEWQDISC, "qdisc")
    return done, [qdisc(off, length) for off, length in found]
