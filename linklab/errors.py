"""Errors users see, each carrying the process exit code the CLI returns."""

from __future__ import annotations

# Exit codes: the one place they are decided; each has one meaning, in every command, and
# docs/commands.md documents them (the --help epilogs point there).
EXIT_OK = 0
EXIT_FAILURE = 1  # the result is bad: B differs, a check failed, an operation or a run failed
EXIT_USAGE = 2  # bad input: invalid topology/experiment/checks file, bad arguments; nothing was changed
EXIT_STATE = 3  # the lab (or a run, or the lab VM) is in another state than the command needs
EXIT_ENV = 4  # the machine lacks something (root, a package, the VM would not boot)
EXIT_NO_LAB = 5  # no lab is up (or the lab VM it lived in is not running): `linklab up` first
EXIT_INCONCLUSIVE = 6  # nothing failed, but a measurement could not be judged (a busy host, the emulator)
EXIT_WARNINGS = 7  # `linklab check`: nothing failed or was inconclusive, but a check of severity warn did
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_BROKEN_PIPE = 141  # the reader of the output went away (128 + SIGPIPE, as a shell reports it)


def result_exit_code(failed: bool, inconclusive: bool = False, warned: bool = False) -> int:
    """The exit code of a judged result (`linklab ab`, `compare`, `check`, a selftest): a
    failure outranks an inconclusive measurement, which outranks a warning."""
    if failed:
        return EXIT_FAILURE
    if inconclusive:
        return EXIT_INCONCLUSIVE
    return EXIT_WARNINGS if warned else EXIT_OK


def check_exit_code(verdicts) -> int:
    """The exit code of `linklab check` for its checks' verdicts (pass, fail, warn,
    inconclusive, skip). A check skipped because one it requires failed adds nothing: that one
    already counts."""
    seen = set(verdicts)
    return result_exit_code("fail" in seen, "inconclusive" in seen, "warn" in seen)


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


class NoLabUp(StateError):
    """No lab is up to act on (none at all, none of that name, or the lab VM it lived in stopped)."""
    exit_code = EXIT_NO_LAB


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
