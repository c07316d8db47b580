"""Enter a named network namespace the way `ip netns exec` does, in a child about to exec.

The agent runs a forwarded `linklab exec NODE -- CMD` this way: its forked child enters the
namespace and execs CMD itself. Going through `ip netns exec` instead costs one more process
image (~0.07-0.1 s under software emulation, the bulk of what a forwarded command may take);
going through the warm linklab interpreter costs ~0.1 s more of Python.

Same steps as iproute2's netns_switch (lib/namespace.c), so commands see what they see under
`ip netns exec`, which the rest of linklab uses (runner.netns_argv): the network namespace, a
private mount namespace whose /sys describes it, and /etc/netns/NAME/* bound over /etc/* (the
lab's hosts file: node names resolve). Python 3.11 has neither os.setns nor a mount call, hence
libc through ctypes.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

NETNS_RUN = "/run/netns"
NETNS_ETC = "/etc/netns"
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_BIND, MS_REC, MS_SLAVE = 0x1000, 0x4000, 0x80000
MNT_DETACH = 2
ST_RDONLY = 1

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Entry:
    """What the child needs, worked out in the parent: after fork, only system calls."""
    name: str
    fd: int  # the namespace file, opened by the parent (closed on exec)
    binds: tuple[tuple[str, str], ...]  # (/etc/netns/NAME/x, /etc/x)


def prepare(name: str) -> Entry:
    """Open the namespace and list its /etc files. FileNotFoundError names a namespace that
    does not exist (a lab taken down meanwhile)."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a namespace name: {name!r}")
    fd = os.open(f"{NETNS_RUN}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    etc = f"{NETNS_ETC}/{name}"
    try:
        files = sorted(os.listdir(etc))
    except FileNotFoundError:
        files = []
    return Entry(name, fd, tuple((f"{etc}/{f}", f"/etc/{f}") for f in files))


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def enter(entry: Entry) -> None:
    """In the child, before exec. Raises OSError at the first step that fails, as
    `ip netns exec` stops there too (a failed /etc bind is only skipped, as there)."""
    _check(_libc.setns(entry.fd, CLONE_NEWNET), f"setns {entry.name}")
    _check(_libc.unshare(CLONE_NEWNS), "unshare mount namespace")
    # Mounts made below must not propagate back to the VM's own namespace.
    _check(_libc.mount(b"", b"/", b"none", MS_SLAVE | MS_REC, None), "mount --make-rslave /")
    flags = MS_NOSUID | MS_NOEXEC | MS_NODEV
    if _libc.umount2(b"/sys", MNT_DETACH) != 0 and os.path.isdir("/sys") and os.statvfs("/sys").f_flag & ST_RDONLY:
        flags |= MS_RDONLY  # overlaying a read-only sysfs that would not go: stay read-only
    _check(_libc.mount(entry.name.encode(), b"/sys", b"sysfs", flags, None), "mount /sys")
    for src, dst in entry.binds:
        _libc.mount(src.encode(), dst.encode(), b"none", MS_BIND, None)


def close(entry: Entry) -> None:
    os.close(entry.fd)
