"""Errors users see, each carrying the process exit code the CLI returns."""

from __future__ import annotations

# Exit codes: stable, documented in the README and `linklab --help`.
EXIT_OK = 0
EXIT_FAILURE = 1  # an operation failed (kernel refused, tool crashed, pre-flight failed)
EXIT_USAGE = 2  # bad input: invalid topology/experiment file, bad arguments; nothing was changed
EXIT_STATE = 3  # the lab is not in the state the command needs (not up, already up elsewhere)
EXIT_ENV = 4  # the machine lacks something (root, a package, the VM would not boot)

# `linklab check` (coursework checks against a running lab) says what its checks found:
#   0 every check run passed, 1 a check failed, 2 a bad checks file (nothing was run),
#   3 only warnings (a check of severity warn failed, nothing else did),
#   4 inconclusive: a measured check could not be judged (its measurement was limited by the
#     emulator or a busy host) and nothing failed.
EXIT_CHECK_FAILED = 1
EXIT_CHECK_WARNINGS = 3
EXIT_CHECK_INCONCLUSIVE = 4


def check_exit_code(verdicts) -> int:
    """The exit code of `linklab check` for its checks' verdicts (pass, fail, warn,
    inconclusive, skip): a failure outranks an inconclusive check, which outranks a warning.
    A check skipped because one it requires failed adds nothing: that one already counts."""
    seen = set(verdicts)
    if "fail" in seen:
        return EXIT_CHECK_FAILED
    if "inconclusive" in seen:
        return EXIT_CHECK_INCONCLUSIVE
    if "warn" in seen:
        return EXIT_CHECK_WARNINGS
    return EXIT_OK


class LinklabError(Exception):
    exit_code = EXIT_FAILURE

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint

    def render(self) -> str:
        text = f"linklab: {self}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UsageError(LinklabError):
    exit_code = EXIT_USAGE


class StateError(LinklabError):
    exit_code = EXIT_STATE


class EnvironmentProblem(LinklabError):
    exit_code = EXIT_ENV


class CommandFailed(LinklabError):
    """A program run through linklab.runner exited non-zero (or timed out)."""

    def __init__(self, argv, returncode, stdout="", stderr="", netns=None, timed_out=False):
        where = f" in namespace {netns}" if netns else ""
        what = "timed out" if timed_out else f"exited {returncode}"
        detail = (stderr or stdout or "").strip().splitlines()[-3:]
        super().__init__(f"{' '.join(map(str, argv))}{where} {what}" + (": " + " | ".join(detail) if detail else ""))
        self.argv, self.returncode, self.stdout, self.stderr = argv, returncode, stdout, stderr
        self.timed_out = timed_out


class ValidationFailed(UsageError):
    """Every problem found in an input file, each with its path; raised once, after collecting all."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        n = len(problems)
        super().__init__(f"{source}: {n} problem{'s' if n != 1 else ''}")

    def render(self) -> str:
        lines = [f"linklab: {self.source}: {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}; nothing was changed"]
        lines += [f"  {p}" for p in self.problems]
        return "\n".join(lines)
