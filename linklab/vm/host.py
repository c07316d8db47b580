"""Facts about the host the lab VM runs on: kernel images, KVM, and which processes are our QEMUs.

This machine's init may never reap orphans, so "alive" means "exists and is not a zombie".
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from pathlib import Path

from linklab.errors import EnvironmentProblem


def kernel_release_of(image: Path) -> str:
    return image.name.removeprefix("vmlinuz-")


def _version_key(release: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"[.\-+~]", release)]


def newest_kernel(boot: Path = Path("/boot")) -> Path:
    images = [p for p in boot.glob("vmlinuz-*") if p.is_file()]
    if not images:
        raise EnvironmentProblem("no kernel image in /boot for the lab VM",
                                 hint="install Debian's linux-image-amd64 (scripts/setup.sh does)")
    return max(images, key=lambda p: _version_key(kernel_release_of(p)))


def kvm_usable(dev: str = "/dev/kvm") -> bool:
    """Whether /dev/kvm opens and speaks the stable API. Says nothing about whether a guest will boot."""
    try:
        fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return fcntl.ioctl(fd, 0xAE00) == 12  # KVM_GET_API_VERSION
    except OSError:
        return False
    finally:
        os.close(fd)


def marker_for(state_dir: Path) -> str:
    digest = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:12]
    return f"linklab-vm-{digest}"


from linklab.procs import alive, cmdline  # noqa: E402  one definition for the package


def pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def has_mark(pid: int, marker: str) -> bool:
    """QEMU itself, with `-name <marker>` (virtme-run's own argv carries the same words: not it)."""
    args = cmdline(pid)
    if not args or not Path(args[0]).name.startswith("qemu-system"):
        return False
    return any(a == "-name" and b == marker for a, b in zip(args, args[1:]))


def find_orphan_vms(state_dir: Path) -> list[int]:
    """Live QEMU processes carrying this state dir's exact mark, whether or not vm.json knows them."""
    marker = marker_for(state_dir)
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            pid = int(entry.name)
            if has_mark(pid, marker) and alive(pid):
                pids.append(pid)
    return sorted(pids)
