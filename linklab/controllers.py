"""Where the bundled OpenFlow controller apps live: controllers/<app>.py, one os-ken app a file."""

from __future__ import annotations

from pathlib import Path

APPS_DIR = Path(__file__).resolve().parents[1] / "controllers"


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
