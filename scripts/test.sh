#!/usr/bin/env bash
# `make test`: every tier, and a non-zero exit if any fails.
#   1. unit + golden + host integration (the CLI lifecycle, which boots the lab VM if needed)
#   2. kernel integration: real labs and packets, run where labs are built — inside the lab VM
#      when this kernel lacks bonding/netem/openvswitch (one boot for the whole tier), else here.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
rc=0
$PY -m pytest tests/unit tests/golden tests/integration/host "$@" || rc=$?
$PY -m linklab vm run --if-needed --stop-after -- $PY -m pytest tests/integration/kernel "$@" || rc2=$?
rc2=${rc2:-0}
echo "make test: fast tiers exit $rc, kernel tier exit $rc2"
[ "$rc" = 0 ] && [ "$rc2" = 0 ] && exit 0
# pytest's 5 (no tests collected) is a failure here too.
[ "$rc" != 0 ] && exit "$rc" || exit "$rc2"
