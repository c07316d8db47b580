"""The interpreter's libraries (its standard library, the venv's site-packages) shared with the
lab VM a second time: read-only, and mounted in the guest with 9p's `cache=loose`.

virtme-ng shares the host's files over 9p without a cache: every stat and open in the guest is a
round trip to QEMU. Python stats and opens hundreds of files per start, a good part of an
os-ken controller's start (bench/README.md#start-up-times), and it starts about ten times in the
kernel tier. Cached, each file is read over 9p once per boot.

The price: the guest does not see a change the host makes to these directories while the VM
runs (`make setup` installing a new requirement). The VM's record keeps `stamp()` from its boot;
a later command that finds it different says so (`linklab vm stop` starts the next one fresh).
linklab's own sources stay on the uncached share: an edit is seen at once.
"""

from __future__ import annotations

import hashlib
import logging
import sysconfig
from pathlib import Path

from linklab import runner
from linklab.errors import CommandFailed

log = logging.getLogger("linklab.vm.pylibs")

TAG = "llpy{}"
MOUNT_OPTS = "trans=virtio,version=9p2000.L,cache=loose,ro,access=any,msize=524288"


def library_dirs() -> list[Path]:
    """This interpreter's library directories (stdlib first), each once, none inside another."""
    paths = sysconfig.get_paths()
    out: list[Path] = []
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = Path(paths[key]).resolve()
        if p.is_dir() and not any(p == d or d in p.parents for d in out):
            out = [d for d in out if p not in d.parents] + [p]
    return out


def qemu_args(dirs: list[Path]) -> list[str]:
    """One read-only 9p device per directory, tagged llpy0, llpy1, ..."""
    args: list[str] = []
    for i, d in enumerate(dirs):
        tag = TAG.format(i)
        args += ["-fsdev", f"local,id={tag},path={d},security_model=none,readonly=on,multidevs=remap",
                 "-device", f"virtio-9p-pci,fsdev={tag},mount_tag={tag}"]
    return args


def agent_arg(dirs: list[Path]) -> str:
    """What the guest's agent is told to mount: tag=path,... (paths are SAFE_PATH: no commas)."""
    return ",".join(f"{TAG.format(i)}={d}" for i, d in enumerate(dirs))


def mount(spec: str) -> list[str]:
    """In the guest: mount each tag over its path, cached. A failure leaves the uncached share in
    place (slower, still correct); returns the paths mounted."""
    done = []
    for item in filter(None, spec.split(",")):
        tag, _, path = item.partition("=")
        try:
            runner.run(["mount", "-t", "9p", "-o", MOUNT_OPTS, tag, path], timeout=30)
            done.append(path)
        except CommandFailed as e:
            log.warning("cached mount of %s failed (left uncached): %s", path, e)
    return done


def stamp() -> str:
    """Changes when a package is installed, upgraded or removed: the names in this interpreter's
    site-packages (a new version is a new <name>-<version>.dist-info). Names only: a mtime would
    also change when a host process writes a missing .pyc, which changes nothing the guest reads."""
    paths = sysconfig.get_paths()
    h = hashlib.sha256()
    for d in sorted({paths["purelib"], paths["platlib"]}):
        try:
            names = sorted(e.name for e in Path(d).iterdir())
        except OSError:
            names = []
        h.update(f"{d}\n{names}\n".encode())
    return h.hexdigest()[:16]
