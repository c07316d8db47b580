"""One class per measurement tool: build argv (pure), parse output (pure), report the tool's version.

Parsing never runs anything, so every parser is tested against captured real output in
tests/data/tools/. Running goes through linklab.runner only.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from linklab import runner
from linklab.errors import LinklabError


class MeasurementError(LinklabError):
    """A tool ran but its output says the measurement did not happen (or cannot be read)."""


class Tool(ABC):
    """Subclasses are frozen dataclasses whose fields are the tool's parameters."""

    name: ClassVar[str]
    binary: ClassVar[str]
    # Does the command resolve lab host names (h2, h2-v6)? Then it runs under `ip netns exec`,
    # which mounts the node's hosts file; otherwise under the cheaper `nsenter --net`.
    needs_names: ClassVar[bool] = True

    @abstractmethod
    def argv(self) -> list[str]:
        """The command line for these parameters. Pure: no I/O, same input, same list."""

    @staticmethod
    @abstractmethod
    def parse(text: str) -> Any:
        """Tool output -> a frozen dataclass or dict. Pure."""

    version_flag: ClassVar[str] = "--version"
    # Group 1 of this regex is the version; None: the first non-empty line of the output.
    version_pattern: ClassVar[str | None] = None

    @classmethod
    def version_argv(cls) -> list[str]:
        return [cls.binary, cls.version_flag]

    @classmethod
    def parse_version(cls, text: str) -> str:
        if cls.version_pattern is None:
            for line in text.splitlines():
                if line.strip():
                    return line.strip()
            raise MeasurementError("empty version output")
        m = re.search(cls.version_pattern, text)
        if not m:
            raise MeasurementError(f"not {cls.binary} {cls.version_flag} output: {text[:80]!r}")
        return m.group(1)

    # Running is deliberately thin: the caller picks the namespace and timeout.
    def run(self, *, netns: str | None = None, timeout: float | None = None) -> Any:
        res = runner.run(self.argv(), netns=netns, timeout=timeout, check=False, names=self.needs_names)
        return self.parse_result(res)

    def parse_result(self, res: runner.Result) -> Any:
        """Hook for tools whose exit code or stderr matters (ping, nstat)."""
        return self.parse(res.stdout)

    @classmethod
    def version(cls, *, netns: str | None = None, timeout: float | None = 10) -> str:
        res = runner.run(cls.version_argv(), netns=netns, timeout=timeout, check=False)
        return cls.parse_version(res.stdout + res.stderr)


def tool_versions(tools: list[type[Tool]], *, netns: str | None = None) -> dict[str, str]:
    """{tool name: version string} for a results manifest."""
    return {t.name: t.version(netns=netns) for t in tools}
