# linklab: the commands users type. Every target that needs the tools runs `setup` first
# (idempotent and quick when nothing is missing), so a fresh clone works with
#   make lab-up && make sweep
# `setup` installs the main job's packages only; a target that needs an optional group installs
# it (scripts/setup.sh --with GROUP, the groups in linklab/setup_groups.py): images, test, docs, bench.
SHELL := /bin/bash
SETUP := bash scripts/setup.sh
VENV := .venv
PY := $(VENV)/bin/python
LINKLAB := $(PY) -m linklab
TOPO ?= topologies/bond2.yaml
EXP ?= experiments/e1_bonding_mtu.yaml
SWEEP_ARGS ?= --quick
PYTEST_ARGS ?=
# make gate: GATE_EXP's quick variant, this checkout (B) against the reference revision (A) named
# in .ci/reference, measured side by side by `linklab ab` (exit 1 when B differs from A; a point or
# two where it does are measured again first, 6 pairs: docs/verdicts.md, "Measured again")
GATE_EXP ?= experiments/e1_bonding_mtu.yaml
GATE_REF ?= $(shell awk '!/^[[:space:]]*(\#|$$)/ {print $$1; exit}' .ci/reference 2>/dev/null)
# The gate's points: E1 quick at its two extreme MTUs (8 of 12 points; every change bench/ab_power.py
# measured was caught inside them, bench/README.md), a third of its time saved: CI stays under 45 min
# on cores twice as slow. GATE_POINTS= measures all 12.
GATE_POINTS ?= --only mtu=450,9200
GATE_ARGS ?=
# make aa: AA_RUNS A/A runs of GATE_EXP quick, then the A/A spread the gate's verdict reads (baselines/…/aa.json)
AA_RUNS ?= 20
# make baseline: store each experiment's quick run (5 repetitions per point) for reports and `linklab compare`
BASELINE_EXPS ?= $(GATE_EXP)
BASELINE_REPS ?=

.PHONY: help setup requirements images lab-up lab-down status sweep report gate aa ab-power baseline reproduction test test-unit test-fuzz test-integration test-extended bench docs clean

help:
	@echo "make setup             the main job's Debian packages and the project virtualenv (idempotent);"
	@echo "                       optional parts: scripts/setup.sh --with GROUP (--help lists them)"
	@echo "make requirements      requirements.txt, requirements-main.txt (the pinned sets) from pyproject.toml, by pip-compile"
	@echo "make images            build linklab/base, the container nodes' image (Debian, no registry; once)"
	@echo "make lab-up [TOPO=…]   build a lab (default $(TOPO)); in a VM if this kernel lacks bonding/netem"
	@echo "make status            show the lab as the kernel reports it"
	@echo "make sweep [EXP=…]     run an experiment (default: $(EXP) $(SWEEP_ARGS))"
	@echo "make report [RUN=…]    report.html + report.md + figures for the newest run (or RUN), beside the published figures"
	@echo "make gate              this checkout against the reference revision (.ci/reference), side by side: linklab ab"
	@echo "make aa                $(AA_RUNS) A/A runs of $(GATE_EXP) quick, then the A/A spread the verdict reads"
	@echo "make ab-power          what the verdict catches and its false alarms, on the A/B runs made (bench/ab_power.py)"
	@echo "make baseline          store $(BASELINE_EXPS)'s quick run(s) again, >= 5 repetitions per point (quiet machine)"
	@echo "make reproduction      README's table of every published finding, from the stored runs"
	@echo "make lab-down          remove everything the lab created"
	@echo "make test              unit + golden + integration tests (integration builds real labs)"
	@echo "make bench             benchmarks (bench/): lab up/down times, sweep overhead, Ray scheduler overhead"
	@echo "make docs              the documentation site: docs/ (README's \"where to read on\") built into site/"

setup:
	@$(SETUP)

# Not a step of setup: run it after changing pyproject.toml's dependencies, and commit the result.
requirements:
	@bash scripts/requirements.sh

# linklab/base from Debian packages with mmdebstrap into .linklab/images/ (kept; rebuilt only when
# missing). The lab's Docker engine imports it the first time a lab names it.
images:
	@$(SETUP) --with images
	$(PY) -m linklab.docker.images --if-missing

lab-up: setup
	$(LINKLAB) up $(TOPO)

lab-down: setup
	$(LINKLAB) down

status: setup
	$(LINKLAB) status

sweep: setup
	$(LINKLAB) sweep $(EXP) $(SWEEP_ARGS)

report: setup
	$(LINKLAB) report $(RUN)

# Both arms in one lab VM boot, interleaved point by point; the verdict and report.html under
# results/ab/<experiment>/. A reference revision is unpacked from git (a full clone has it).
gate: setup
	@test -n "$(GATE_REF)" || { echo "make gate: no revision in .ci/reference" >&2; exit 2; }
	$(LINKLAB) ab $(GATE_EXP) --quick --a-rev $(GATE_REF) $(GATE_POINTS) $(GATE_ARGS)

# Resumable: the A/A runs already complete under results/ab/ count.
aa: setup
	$(LINKLAB) aa $(GATE_EXP) --quick --runs $(AA_RUNS)

ab-power: setup
	$(PY) bench/ab_power.py --experiment $(basename $(notdir $(GATE_EXP)))

# Each experiment's quick variant, 5 repetitions per point (or BASELINE_REPS), into baselines/<name>-quick-vm-tcg
# (the name says the machine kind: the lab VM under software emulation); its lab is taken down after
# (`linklab down`: the only lab up), so start with no lab up.
baseline: setup
	@rc=0; for exp in $(BASELINE_EXPS); do \
	  name=$$(basename $$exp .yaml); t0=$$(date +%s); \
	  $(LINKLAB) baseline $$exp baselines/$$name-quick-vm-tcg --quick $(if $(BASELINE_REPS),--repetitions $(BASELINE_REPS)) || rc=1; \
	  echo "make baseline: $$name took $$(( $$(date +%s) - t0 )) s"; \
	  $(LINKLAB) down || true; \
	done; exit $$rc

# README's table of every published finding, from the stored runs (reproductions/, else baselines/)
reproduction: setup
	$(LINKLAB) report --findings-table --into README.md

test:
	@$(SETUP) --with test
	bash scripts/test.sh $(PYTEST_ARGS)

test-unit:
	@$(SETUP) --with test
	$(PY) -m pytest tests/unit tests/golden $(PYTEST_ARGS)

test-fuzz:
	@$(SETUP) --with test
	$(PY) -m pytest tests/fuzz $(PYTEST_ARGS)

test-integration:
	@$(SETUP) --with test
	$(PY) -m pytest tests/integration/host $(PYTEST_ARGS)
	$(LINKLAB) vm run --if-needed --stop-after -- $(PY) -m pytest tests/integration/kernel $(PYTEST_ARGS)

# The kernel tests `make test` leaves out (pyproject.toml's `extended` marker: a second measurement
# of what a test in make test shows, the lab-VM exercises' broken variants), one at a time in one
# lab VM boot: ~15 min.
test-extended:
	@$(SETUP) --with test
	$(LINKLAB) vm run --if-needed --stop-after -- $(PY) -m pytest tests/integration/kernel -m extended $(PYTEST_ARGS)

bench:
	@$(SETUP) --with bench
	$(PY) bench/lab_up.py
	$(PY) bench/sweep_overhead.py
	$(PY) bench/ray_overhead.py

# MkDocs with mkdocs.yml's strict: a broken link, anchor or page missing from nav fails the build.
docs:
	@$(SETUP) --with docs
	$(PY) -m mkdocs build --clean --site-dir site
	@echo "make docs: open site/index.html"

clean: setup
	$(LINKLAB) clean
