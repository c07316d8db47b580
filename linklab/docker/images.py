"""Images for container nodes, with no registry: `make images` builds linklab/base from Debian
packages (mmdebstrap -> a root filesystem tarball), and the engine imports it when a lab first
names it (`docker import`, through the API). Any other image is one the engine has, one pulled
on first use, or one saved with `docker save` into IMAGES_DIR.

The tarball, not the engine, is what lasts: the engine's storage is a tmpfs (engine.py).

    python -m linklab.docker.images          # what `make images` runs
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
import time
from pathlib import Path

from linklab import bundled, runner, setup_groups
from linklab.docker import engine
from linklab.docker.api import Api, ApiError, UploadCut, split_image
from linklab.errors import EnvironmentProblem, LinklabError

BASE = "linklab/base"
SUITE = "bookworm"
# What a lab node needs: addresses and queues (iproute2: ip, ss, tc, nstat), traffic (iperf3),
# ping, and `sleep` (coreutils, in minbase) as its default command.
PACKAGES = ("iproute2", "iperf3", "iputils-ping", "procps", "netbase")
# An imported root filesystem has no command; a node's container must keep running.
DEFAULT_CMD = '["sleep", "infinity"]'
IMPORT_TIMEOUT_S = 600.0
PULL_TIMEOUT_S = 900.0
BUILD_TIMEOUT_S = 1800.0


def images_dir() -> Path:
    """Beside the checkout's state (shared with the lab VM, which mounts the checkout); an installed
    linklab (no checkout) keeps them in the user's cache, one copy for every directory."""
    if os.environ.get("LINKLAB_IMAGES_DIR"):
        return Path(os.environ["LINKLAB_IMAGES_DIR"])
    top = bundled.checkout()
    if top is not None:
        return top / ".linklab" / "images"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "linklab" / "images"


def tarball(image: str) -> Path:
    """Where a locally built or saved image is kept: linklab/base -> linklab_base.tar."""
    repo, tag = split_image(image)
    stem = repo.replace("/", "_").replace(":", "_") + ("" if tag == "latest" else f"_{tag.lstrip('@')}")
    return images_dir() / f"{stem}.tar"


def hint(image: str) -> str:
    if split_image(image)[0] == BASE:
        return "`make images` builds it (from Debian packages, no registry needed)"
    return (f"pull it where the engine can reach a registry, or `docker save {image} -o {tarball(image)}` "
            f"on a machine that has it; `make images` builds {BASE}")


def ensure(api: Api, image: str, say=print) -> None:
    """The engine has `image` after this, or EnvironmentProblem (exit 4) says how to get it."""
    if api.image(image) is not None:
        return
    tar = tarball(image)
    repo, tag = split_image(image)
    if tar.exists():
        say(f"linklab: loading image {image} from {tar}")
        t0 = time.monotonic()
        try:
            if _is_saved_image(tar):
                api.load(tar, timeout=IMPORT_TIMEOUT_S)
            else:
                api.import_rootfs(tar, repo, tag, [f"CMD {DEFAULT_CMD}"], timeout=IMPORT_TIMEOUT_S)
        except UploadCut as e:
            raise LinklabError(f"loading image {image}: {e}", hint=f"the end of the engine's log ({engine.LOG}):\n"
                               + engine.tail()) from None
        say(f"linklab: image {image} loaded in {time.monotonic() - t0:.1f} s")
        if api.image(image) is None:
            raise EnvironmentProblem(f"{tar} does not hold image {image}", hint=hint(image))
        return
    say(f"linklab: image {image} is not here: pulling it")
    try:
        api.pull(image, timeout=PULL_TIMEOUT_S)
    except (ApiError, OSError) as e:
        raise EnvironmentProblem(f"image {image!r} is not in linklab's Docker engine, not built here "
                                 f"({tar} does not exist), and pulling it failed: {e}", hint=hint(image)) from None


def _is_saved_image(tar: Path) -> bool:
    """`docker save` output (manifest.json at its top) rather than a root filesystem."""
    try:
        with tarfile.open(tar) as t:
            for member in t:
                if member.name.lstrip("./") == "manifest.json":
                    return True
                if member.name.lstrip("./").startswith(("bin", "etc", "usr")):
                    return False
    except (OSError, tarfile.TarError):
        return False
    return False


def build(say=print, mirror: str | None = None) -> Path:
    """linklab/base's root filesystem, from Debian packages: `mmdebstrap` (no library builds a
    Debian root; it runs through linklab.runner like every program)."""
    out = tarball(BASE)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tar.part")
    argv = ["mmdebstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}",
            "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
            "--dpkgopt=path-exclude=/usr/share/locale/*", "--format=tar", SUITE, str(tmp)]
    if mirror:
        argv.append(mirror)
    say(f"linklab: building {BASE} ({', '.join(PACKAGES)}) with mmdebstrap into {out}")
    t0 = time.monotonic()
    try:
        runner.run(argv, timeout=BUILD_TIMEOUT_S)
    except LinklabError as e:
        tmp.unlink(missing_ok=True)
        if "not found" in str(e):
            raise EnvironmentProblem("mmdebstrap is not installed", hint=f"install it: {setup_groups.install_command('images')}") from None
        raise
    os.replace(tmp, out)
    say(f"linklab: {BASE} built in {time.monotonic() - t0:.0f} s ({out.stat().st_size / 1e6:.0f} MB)")
    return out


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m linklab.docker.images",
        description=f"Build {BASE}, the container nodes' image, from Debian packages with mmdebstrap "
                    f"(no image registry needed) into {tarball(BASE)}. `make images` runs it.")
    parser.add_argument("--if-missing", action="store_true", help="do nothing when the image is already built")
    opts = parser.parse_args(args)
    if opts.if_missing and tarball(BASE).exists():
        print(f"linklab: {tarball(BASE)} exists (delete it to rebuild)")
        return 0
    try:
        build()
    except LinklabError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
