# linklab: the commands users type. Every target that needs the tools runs `setup` first
# (idempotent and quick when nothing is missing), so a fresh clone works with
#   make lab-up && make sweep
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
LINKLAB := $(PY) -m linklab
TOPO ?= topologies/bond2.yaml
EXP ?= experiments/e1_bonding_mtu.yaml
SWEEP_ARGS ?= --quick
PYTEST_ARGS ?=
# make regress: a quick sweep of REGRESS_EXP compared against the baseline stored for it
REGRESS_EXP ?= experiments/e1_bonding_mtu.yaml
REGRESS_NAME = $(basename $(notdir $(REGRESS_EXP)))
BASELINE ?= baselines/$(REGRESS_NAME)-quick-vm-tcg
# extra `linklab compare` options, e.g. --tolerance 35 when the baseline came from another machine
REGRESS_ARGS ?=
REGRESS_SWEEP_ARGS ?=
# make baseline / noise / gate-power: the gate's own measurements, on a quiet machine (see README)
BASELINE_EXPS ?= $(REGRESS_EXP)
BASELINE_REPS ?=
NOISE_RERUNS ?= 10
NOISE_RESULTS ?= results-noise

.PHONY: help setup images lab-up lab-down status sweep report regress baseline noise gate-power test test-unit test-fuzz test-integration bench clean

help:
	@echo "make setup             install Debian packages and the project virtualenv (idempotent)"
	@echo "make images            build linklab/base, the container nodes' image (Debian, no registry; once)"
	@echo "make lab-up [TOPO=…]   build a lab (default $(TOPO)); in a VM if this kernel lacks bonding/netem"
	@echo "make status            show the lab as the kernel reports it"
	@echo "make sweep [EXP=…]     run an experiment (default: $(EXP) $(SWEEP_ARGS))"
	@echo "make report [RUN=…]    report.html + report.md + figures for the newest run (or RUN), beside the published figures"
	@echo "make regress           quick sweep of $(REGRESS_EXP), compared with $(BASELINE) (exit 1 if it regressed)"
	@echo "make baseline          record $(BASELINE_EXPS)'s quick baseline(s) again, >= 5 repetitions per point (quiet machine)"
	@echo "make noise             $(NOISE_RERUNS) quiet reruns of $(REGRESS_EXP), then the E1 baseline's noise floor (noise.json)"
	@echo "make gate-power        what the gate catches (bench/gate_power.py) on those reruns"
	@echo "make lab-down          remove everything the lab created"
	@echo "make test              unit + golden + integration tests (integration builds real labs)"
	@echo "make bench             benchmarks (bench/): lab up/down times, sweep overhead, Ray scheduler overhead"

setup:
	@bash scripts/setup.sh

# linklab/base from Debian packages with mmdebstrap into .linklab/images/ (kept; rebuilt only when
# missing). The lab's Docker engine imports it the first time a lab names it.
images: setup
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

# A new run every time (--force), then `linklab compare`: exit 1 when a metric left its band.
# REGRESS_SWEEP_ARGS: e.g. --points ID,ID to measure again only the points a failed gate named.
regress: setup
	$(LINKLAB) sweep $(REGRESS_EXP) --quick --force $(REGRESS_SWEEP_ARGS)
	$(LINKLAB) compare $(BASELINE) $(REGRESS_EXP) $(REGRESS_ARGS)

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

# Resumable: reruns already complete under NOISE_RESULTS count, an interrupted one is resumed.
noise: setup
	$(LINKLAB) noise $(BASELINE) --record $(NOISE_RERUNS) --results $(NOISE_RESULTS)
	$(LINKLAB) down || true

gate-power: setup
	$(PY) bench/gate_power.py --baseline $(BASELINE) --reruns $(NOISE_RESULTS)/$(REGRESS_NAME)

test: setup
	bash scripts/test.sh $(PYTEST_ARGS)

test-unit: setup
	$(PY) -m pytest tests/unit tests/golden $(PYTEST_ARGS)

test-fuzz: setup
	$(PY) -m pytest tests/fuzz $(PYTEST_ARGS)

test-integration: setup
	$(PY) -m pytest tests/integration/host $(PYTEST_ARGS)
	$(LINKLAB) vm run --if-needed --stop-after -- $(PY) -m pytest tests/integration/kernel $(PYTEST_ARGS)

bench:
	@bash scripts/setup.sh --bench
	$(PY) bench/lab_up.py
	$(PY) bench/sweep_overhead.py
	$(PY) bench/ray_overhead.py

clean: setup
	$(LINKLAB) clean
