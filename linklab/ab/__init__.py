"""`linklab ab`: two arms of one experiment measured side by side, interleaved in one lab VM boot,
and judged by the verdict (linklab/verdict, docs/verdicts.md).

    arms.py     what an arm is (a revision of the checkout, lab settings on top), made runnable
    session.py  the arms' stepwise sweeps driven in ABBA order, point by point
    cli.py      the command: arguments, the lab VM, the verdict and the report
"""
