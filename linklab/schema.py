"""`linklab schema topology|experiment`: the JSON Schema of a file kind, generated from the
models that validate it (linklab/model/topology.py, linklab/sweep/experiment.py), for editors
that check YAML as it is typed (yaml-language-server: the modeline at the top of a file).

The schema describes the file as written: a rate is a number or text such as `100mbit`, an
endpoint `h1:eth1` or a mapping. It catches what one file can say about itself (unknown settings,
kinds and units, bounds, names); what relates parts of a file (an endpoint naming a node that
exists, a bond option its mode allows) is `linklab validate`'s, with the line of each problem.
"""

from __future__ import annotations

import json
from typing import Any

DIALECT = "https://json-schema.org/draft/2020-12/schema"
KINDS = ("topology", "experiment")
# Where the bundled files' modelines point (relative to topologies/ and experiments/).
FILES = {"topology": "schemas/topology.schema.json", "experiment": "schemas/experiment.schema.json"}


def schema(kind: str) -> dict[str, Any]:
    if kind == "topology":
        from linklab.model.topology import Topology as model
        what = "a linklab topology: hosts, switches and the links between them"
    elif kind == "experiment":
        from linklab.sweep.experiment import Experiment as model
        what = "a linklab experiment: a matrix of lab settings and tool parameters, measured repeatedly"
    else:
        from linklab.errors import UsageError
        raise UsageError(f"unknown schema {kind!r} (valid: {', '.join(KINDS)})")
    body = model.model_json_schema(mode="validation", by_alias=True)
    return {"$schema": DIALECT, "title": f"linklab {kind}", "description": f"{what} (`linklab schema {kind}`)",
            **{k: v for k, v in body.items() if k not in ("title", "description")}}


def text(kind: str) -> str:
    return json.dumps(schema(kind), indent=2, sort_keys=False) + "\n"
