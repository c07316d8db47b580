#!/usr/bin/env bash
# Idempotent set-up: the Debian packages and the project virtualenv (pinned Python packages) of the
# main job, and of each optional group asked for. Safe to rerun: it installs only what is missing,
# says what it is doing, and is quick when nothing is.
#   scripts/setup.sh                  the main job (`make setup`): a lab built and swept, natively or
#                                     in the lab VM; requirements-main.txt
#   scripts/setup.sh --with GROUP     the main job and GROUP too (repeatable): ovs, sdn, containers,
#                                     images, frr, mininet, irtt, cluster, docs, bench, test (the suite:
#                                     every group, requirements.txt: what CI installs)
# The groups' packages are listed once, in linklab/setup_groups.py; `linklab doctor` and the
# features that find a part missing name these commands. Exit 2: an unknown group; 4: packages
# missing and not root (the command to run is named).
set -euo pipefail
cd "$(dirname "$0")/.."

groups=()
while [ $# -gt 0 ]; do
  case $1 in
    --with) [ $# -ge 2 ] || { echo "linklab setup: --with needs a group" >&2; exit 2; }; groups+=("$2"); shift 2 ;;
    --with=*) groups+=("${1#--with=}"); shift ;;
    --bench) groups+=(bench); shift ;;  # the older spelling of --with bench
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "linklab setup: unknown option $1 (scripts/setup.sh --help)" >&2; exit 2 ;;
  esac
done
with_args=""
for g in "${groups[@]}"; do with_args+=" --with $g"; done
say_groups=${groups[*]:-}
say_groups=${say_groups:+ and ${say_groups// /, }}
GROUPS_PY=(python3 linklab/setup_groups.py)
apt_packages=$("${GROUPS_PY[@]}" apt "${groups[@]}") || exit 2
want_extras=$("${GROUPS_PY[@]}" extras "${groups[@]}")

missing=()
for p in $apt_packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "linklab setup: need root to install: ${missing[*]}: run  sudo $0$with_args" >&2
    exit 4
  fi
  echo "linklab setup: installing Debian packages for the main job$say_groups: ${missing[*]}"
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
  case " ${missing[*]} " in *" openvswitch-switch "*)
    systemctl disable --now openvswitch-switch >/dev/null 2>&1 || true ;; esac
  # Nor is the distro's Docker service: linklab starts its own dockerd where the lab runs (linklab/docker).
  case " ${missing[*]} " in *" docker.io "*)
    systemctl disable --now docker.service docker.socket containerd.service >/dev/null 2>&1 || true ;; esac
  # Nor the distro's FRR service: linklab starts zebra and ospfd in each router of a lab (backends/linux/frrd.py).
  case " ${missing[*]} " in *" frr "*)
    systemctl disable --now frr.service >/dev/null 2>&1 || true ;; esac
  # Nor irtt's: the udp_rtt probe starts a server on the lab's server node for each repetition.
  case " ${missing[*]} " in *" irtt "*)
    systemctl disable --now irtt.service >/dev/null 2>&1 || true ;; esac
else
  echo "linklab setup: Debian packages present (main job$say_groups)"
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
if [ ! -x .venv/bin/python ]; then
  echo "linklab setup: creating virtualenv .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
# What is installed, one stamp per pinned set: .venv/.linklab-setup/NAME holds the checksum of the
# requirements file it was installed from. requirements.txt installed whole ("all") covers the main
# job and every extra: its pins are requirements-main.txt's too (scripts/requirements.sh).
STAMPS=.venv/.linklab-setup
mkdir -p "$STAMPS"
sum() { sha256sum "$1" | cut -d' ' -f1; }
all_sum=$(sum requirements.txt)
main_sum=$(sum requirements-main.txt)
# A venv set up before the groups existed: it has requirements.txt whole.
[ "$(cat .venv/.requirements.sha 2>/dev/null)" = "$all_sum" ] && echo "$all_sum" > "$STAMPS/all"
current() { [ "$(cat "$STAMPS/all" 2>/dev/null)" = "$all_sum" ] || [ "$(cat "$STAMPS/$1" 2>/dev/null)" = "$2" ]; }
pip=(.venv/bin/pip install -q --disable-pip-version-check)
installed=()
if grep -qx test <<< "$want_extras"; then
  # The suite exercises every optional part: requirements.txt whole, what CI installs.
  if ! current all "$all_sum" || ! .venv/bin/python -c 'import linklab' 2>/dev/null; then
    echo "linklab setup: installing Python packages from requirements.txt (the main job and every extra)"
    "${pip[@]}" -r requirements.txt
    "${pip[@]}" --no-deps -e .
    echo "$all_sum" > "$STAMPS/all"
    installed+=(all)
  fi
else
  if ! current main "$main_sum" || ! .venv/bin/python -c 'import linklab' 2>/dev/null; then
    echo "linklab setup: installing Python packages from requirements-main.txt (the main job)"
    "${pip[@]}" -r requirements-main.txt
    "${pip[@]}" --no-deps -e .
    echo "$main_sum" > "$STAMPS/main"
    installed+=(main)
  fi
  for extra in $want_extras; do
    current "$extra" "$all_sum" && continue
    # pyproject.toml's requirements of the extra, at requirements.txt's pins.
    mapfile -t reqs < <("${GROUPS_PY[@]}" requirements "$extra")
    echo "linklab setup: installing linklab's extra [$extra]: ${reqs[*]} (pinned by requirements.txt)"
    "${pip[@]}" -c requirements.txt "${reqs[@]}"
    echo "$all_sum" > "$STAMPS/$extra"
    installed+=("$extra")
  done
fi
[ ${#installed[@]} -gt 0 ] || echo "linklab setup: Python packages up to date"
echo "linklab setup: done (activate with: . .venv/bin/activate)"
