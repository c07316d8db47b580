#!/usr/bin/env bash
# Idempotent set-up: Debian packages the lab needs, then a project virtualenv with pinned Python deps.
# Safe to rerun: it installs only what is missing and says what it is doing.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(iproute2 iputils-ping iperf3 ethtool sysstat procps kmod
              qemu-system-x86 linux-image-amd64 busybox-static udev openvswitch-switch
              chromium mininet bridge-utils tmux docker.io mmdebstrap)
# chromium: the report tests open each report.html headless; mininet, bridge-utils: exported
# Mininet scripts run in the interop tests; tmux drives `linklab cli` in its terminal test.
# docker.io: the engine of container nodes (linklab starts its own dockerd, where the lab runs);
# mmdebstrap: `make images` builds their base image from Debian packages, no registry needed.
# `setup.sh --bench`: also what the benchmarks compare against (Mininet on Linux bridges).
if [ "${1:-}" = "--bench" ]; then
  APT_PACKAGES+=(mininet bridge-utils)
fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "linklab setup: need root to install: ${missing[*]}" >&2; exit 1
  fi
  echo "linklab setup: installing Debian packages: ${missing[*]} (a few minutes the first time)"
  apt-get update -qq
  # Packages' services (docker, containerd, openvswitch) must not start on this machine: their
  # daemons would add bridges and firewall rules to its own network. policy-rc.d (Debian's
  # mechanism, invoke-rc.d(8)) refuses every start while we install; removed after if ours.
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# linklab setup: no service starts during install\nexit 101\n' > "$policy"
    chmod +x "$policy"
    trap 'grep -q "linklab setup" "$policy" 2>/dev/null && rm -f "$policy"' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The distro's Open vSwitch service is not ours to run: linklab starts its own ovsdb/vswitchd per lab.
  systemctl disable --now openvswitch-switch >/dev/null 2>&1 || true
  # Nor is the distro's Docker service: linklab starts its own dockerd where the lab runs (linklab/docker).
  systemctl disable --now docker.service docker.socket containerd.service >/dev/null 2>&1 || true
else
  echo "linklab setup: Debian packages present"
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "linklab setup: creating virtualenv .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c 'import linklab' 2>/dev/null; then
  echo "linklab setup: installing Python packages from requirements.txt"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" > "$stamp"
else
  echo "linklab setup: Python packages up to date"
fi
echo "linklab setup: done (activate with: . .venv/bin/activate)"
