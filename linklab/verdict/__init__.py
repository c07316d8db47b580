"""The verdict: does run B differ from run A? One model, for `linklab ab` (A and B measured side
by side: the gate) and `linklab compare` (a stored run against another: advisory).
docs/verdicts.md is its one description; its modules follow that page from top to bottom:

    metrics    what each metric is, and how the verdict judges it: scale, harmless side, minimum effect
    model      what a verdict is made of: judgments (within, FAIL, harmless, inconclusive) and the result
    effect     steps 1-3 at a point: values on the metric's scale, the repetitions judged, own spread
    aa         the A/A spread: how far B/A moves at each point when nothing changed (`linklab aa`)
    structure  missing, failed, pre-flight, path MTU; flags B carries more often than A
    judging    steps 3-5 for every point and metric, each metric over every point; `judge`
    output     the verdict as text and as verdict.json
    compare    a stored run against another (`linklab compare`), advisory
    stats      n, mean, sd, variance, 95 % CI of a point's repetitions (the report's tables)

What callers use is named here.
"""

from linklab.verdict.judging import judge
from linklab.verdict.model import ALPHA, EVERY_POINT, FAIL, HARMLESS, INCONCLUSIVE, WITHIN, Judgment, Result
from linklab.verdict.output import as_json, render, row_text

__all__ = ["judge", "Result", "Judgment", "ALPHA", "EVERY_POINT", "FAIL", "HARMLESS", "INCONCLUSIVE", "WITHIN",
           "as_json", "render", "row_text"]
