"""What every model of a file linklab reads is built on: a frozen model that refuses unknown
settings, and the JSON Schema of a quantity written with units."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, WithJsonSchema

from linklab import units


class Model(BaseModel):
    # Frozen: a loaded topology is a value; changes go through overrides and a re-resolve.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def written(number: dict, *unit_sets) -> WithJsonSchema:
    """The JSON Schema of a quantity as a file may write it (`linklab schema`): a number, or text
    in one of these units (units.pattern); what the model keeps after parsing is not what is typed."""
    return WithJsonSchema({"anyOf": [number, {"type": "string", "pattern": units.pattern([u for us in unit_sets for u in us])}]})


def words(v, what: str):
    """A command as its words. One written as one string is split as a shell would split it, and
    no shell runs it: containerlab does the same with its `exec:` strings (exec/exec.go:
    shlex.Split), so a command imported from it runs here as there. Pipes, redirections and `&&`
    need a shell named in the command (`sh -c '...'`), as in containerlab. A list is taken as is."""
    if isinstance(v, str):
        import shlex
        try:
            return shlex.split(v)
        except ValueError as e:
            raise ValueError(f"{what} {v!r} cannot be split into words: {e}") from None
    return v


def cmd_words(v):
    """A `cmd:` (an exec item's, a readiness sign's) as its words."""
    return words(v, "cmd")
