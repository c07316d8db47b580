"""What the papers behind the experiments published, and linklab's runs beside it. Everything here
reads a run (linklab/results) and the experiment's reference file; the report (linklab/report)
shows it, and README's reproduction table is made from it.

    reference     a run beside its reference file: which of the below the reference asks for
    figures       linklab's figures beside the published ones, in comparable units
    findings      published findings as checkable statements -> agrees / differs / explained
    cpu_model     E1's CPU% = alpha * packets/s + beta, fitted with its uncertainty
    reproduction  one table of every published finding (`linklab report --findings-table`)
"""
