"""Coursework checks: `linklab check` says whether a running lab is right, and why not.

  spec.py       a checks file (or a topology's `checks:` section): read, every problem with its
                path and line, validated against the lab it names before anything runs
  kinds/        one module per kind of check, behind a registry (kinds/__init__.py): what it
                reads or measures (observe) and a pure judgement of what it got (judge)
  run.py        the checks in order (a check after those it requires), verdicts, points
  output.py     the table, JSON (a versioned schema) and JUnit
  watch.py      rerun whenever the lab changes
  exercise.py   shipped exercises (exercises/): the steps of a reference solution and its broken
                variants, and `--selftest` that proves the checks tell them apart
  roster.py     a class: one row per student from saved results or from their solutions
  cli.py        `linklab check`
"""
