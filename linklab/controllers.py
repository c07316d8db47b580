"""Where the bundled OpenFlow controller apps live: controllers/<app>.py, one os-ken app a file."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from linklab import bundled, extras

APPS_DIR = bundled.folder("controllers")


def apps() -> list[str]:
    return sorted(p.stem for p in APPS_DIR.glob("*.py") if not p.stem.startswith("_"))


def app_path(app: str) -> Path:
    return APPS_DIR / f"{app}.py"


def app_problem(app: str) -> str | None:
    """None if `app` is a bundled app, else what to write instead."""
    if app in apps():
        return None
    valid = ", ".join(apps()) or "none"
    if app.split(".")[0].lower() == "ryu":
        return (f"controller {app!r}: Ryu does not import on Python 3.11 (its eventlet is too old); linklab runs "
                f"os-ken, Ryu's maintained fork, with the same apps: use controller: l2_learning (Ryu's "
                f"simple_switch_13), hub, lacp or multipath (valid: {valid})")
    return f"unknown controller app {app!r} (valid: {valid}; each is controllers/<app>.py)"


def manager() -> str:
    """osken-manager: beside this interpreter (the [sdn] extra installs it there), else on PATH."""
    beside = Path(sys.executable).parent / "osken-manager"
    found = str(beside) if beside.exists() else shutil.which("osken-manager")
    if not found:
        raise extras.problem("sdn", "an OpenFlow controller (a switch's controller: in the topology)",
                             detail="osken-manager is not found")
    return found


def manager_argv(app_file: Path | str, port: int, manager_path: str | None = None) -> list[str]:
    """osken-manager running one app, listening on loopback only."""
    return [manager_path or manager(), "--ofp-listen-host", "127.0.0.1", "--ofp-tcp-listen-port", str(port),
            str(app_file)]


# eventlet's green DNS resolver pulls in dnspython (and through it cryptography): a large share
# of osken-manager's imports (bench/README.md#start-up-times). A controller listens on and is
# reached at numeric loopback addresses: it resolves no names.
MANAGER_ENV = ("EVENTLET_NO_GREENDNS=yes",)


def app_env(layout: dict[str, Any], dpid: int) -> list[str]:
    """What an app is told of its switch (controllers/_grouped.py), and the manager's own
    settings (MANAGER_ENV), as NAME=VALUE words."""
    return [f"LINKLAB_SWITCH={json.dumps(layout, separators=(',', ':'))}", f"LINKLAB_DPID={dpid}", *MANAGER_ENV]


def app_sources(app: str) -> dict[str, str]:
    """The app's file and the shared files (`_*.py`) it may import, by file name: what a copy of
    the app needs to run elsewhere (an exported Mininet script carries them)."""
    files = [app_path(app), *sorted(APPS_DIR.glob("_*.py"))]
    return {p.name: p.read_text() for p in files}
