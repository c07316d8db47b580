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
