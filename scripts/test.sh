#!/usr/bin/env bash
# `make test`: every tier, and a non-zero exit if any fails.
#   1. unit + golden + fuzz (malformed inputs, ~1200 documents, 1-3 min) + host integration (the CLI lifecycle, which boots the lab VM if needed)
#   2. kernel integration: real labs and packets, run where labs are built — inside the lab VM
#      when this kernel lacks bonding/netem/openvswitch (one boot for the whole tier), else here.
# Honest: it fails when an integration tier did not run (no root, the VM would not start, all
# skipped), and when the host's network differs after the run from before it (linklab must
# touch nothing of the host's: interfaces, addresses, routes, namespaces, qdiscs, sysctls).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
REPORTS=.linklab/test-reports
mkdir -p "$REPORTS"
rm -f "$REPORTS"/*.xml
fail() { echo "make test: $*" >&2; }

if [ "$(id -u)" = 0 ]; then
  bash scripts/host_snapshot.sh > "$REPORTS/host-before.txt"
fi

rc=0
$PY -m pytest tests/unit tests/golden tests/fuzz tests/integration/host --junitxml="$REPORTS/fast.xml" "$@" || rc=$?
$PY -m linklab vm run --if-needed --stop-after -- $PY -m pytest tests/integration/kernel \
    --junitxml="$REPORTS/kernel.xml" "$@" || rc2=$?
rc2=${rc2:-0}
echo "make test: fast tiers exit $rc, kernel tier exit $rc2"

# Did the integration tiers run? Count their test cases in the JUnit reports.
ran=0
$PY - "$REPORTS" <<'PYEOF' || ran=$?
import sys, xml.etree.ElementTree as ET
from pathlib import Path
d = Path(sys.argv[1])
problems = []
for tier, report, prefix in (("host integration", "fast.xml", "tests.integration.host"),
                             ("kernel integration", "kernel.xml", "")):
    path = d / report
    if not path.exists():
        problems.append(f"{tier} tier did not run: no report {path} (the lab VM did not start?)")
        continue
    cases = [c for c in ET.parse(path).iter("testcase") if c.get("classname", "").startswith(prefix)]
    skipped = [c for c in cases if c.find("skipped") is not None]
    ran = len(cases) - len(skipped)
    print(f"make test: {tier}: {ran} tests ran, {len(skipped)} skipped")
    if ran == 0:
        problems.append(f"{tier} tier ran no test ({len(skipped)} skipped)")
for p in problems:
    print(f"make test: FAIL: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
PYEOF

iso=0
if [ "$(id -u)" = 0 ]; then
  bash scripts/host_snapshot.sh > "$REPORTS/host-after.txt"
  if ! diff -u "$REPORTS/host-before.txt" "$REPORTS/host-after.txt" > "$REPORTS/host-diff.txt"; then
    fail "FAIL: the host's network changed during the tests (linklab must not touch it):"
    cat "$REPORTS/host-diff.txt" >&2
    iso=1
  else
    echo "make test: host isolation: interfaces, addresses, routes, namespaces, qdiscs, net sysctls unchanged"
  fi
else
  fail "FAIL: not root: the integration tiers and the host-isolation check cannot run"
  iso=1
fi

[ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$ran" = 0 ] && [ "$iso" = 0 ] && exit 0
# pytest's 5 (no tests collected) is a failure here too.
[ "$rc" != 0 ] && exit "$rc"
[ "$rc2" != 0 ] && exit "$rc2"
exit 1
