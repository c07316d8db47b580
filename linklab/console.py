"""What a command tells its user: one line on stdout, flushed at once, so progress streams
through a command forwarded into the lab VM instead of arriving when it ends. Every command
module prints through `say`; none imports the CLI for it."""

from __future__ import annotations


def say(msg: str) -> None:
    print(msg, flush=True)
