"""When a started program is ready: the one definition behind a command tool's server
(`tool.ready:` in experiment files) and a node's background service (an `exec:` item with
`background: true` in topology files). The wait itself is linklab/ready.py."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, Field, model_validator

from linklab import ready, units
from linklab.model.base import Model, cmd_words, written
from linklab.ready import SIGNS  # what a started program shows once it is ready; one is given




def _secs(v):
    return None if v is None else units.parse_time(v)


Seconds = Annotated[float, BeforeValidator(_secs), Field(ge=0),
                    written({"type": "number", "minimum": 0}, ["", *units.TIME_UNITS])]


def regex(pattern: str, groups: int | None) -> None:
    """ValueError unless `pattern` compiles (with exactly `groups` groups, when given)."""
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ValueError(f"not a regular expression: {pattern!r} ({e})") from None
    if groups is not None and compiled.groups != groups:
        raise ValueError(f"regex {pattern!r} needs exactly {groups} group (it has {compiled.groups}): the group is the value")


class Ready(Model):
    """When a started program is ready: it listens on `port` (TCP or UDP, in its node), `file`
    exists (relative to the directory it runs in), its output matches the regex `log`, or `cmd`
    (run in its node) exits 0; it has `timeout` to get there. The one definition behind a command
    tool's server (experiment files) and a node's background service (`exec:`); the wait is
    linklab/ready.py."""

    port: Annotated[int, Field(ge=1, le=65535)] | None = None
    file: Annotated[str, Field(min_length=1)] | None = None
    log: Annotated[str, Field(min_length=1)] | None = None
    cmd: Annotated[list[str], BeforeValidator(cmd_words, json_schema_input_type=str | list[str]),
                   Field(min_length=1)] | None = None
    timeout: Seconds = 30.0

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in SIGNS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(SIGNS)} (given: {', '.join(given) or 'none'})")
        if self.log is not None:
            regex(self.log, groups=None)
        return self

    def sign(self) -> str:
        """What it waits for, as a user reads it: "port 8000", "cmd curl -sf http://h1/"."""
        return ready.sign(self.model_dump())


