#!/usr/bin/env bash
# The set-up's time on a fresh Debian: each git revision named is unpacked into a throwaway chroot
# (mmdebstrap, this machine's suite, variant minbase plus what a clone needs: python3, python3-venv,
# make, git, ca-certificates) and `bash scripts/setup.sh` timed there, then timed again (the
# idempotent case: nothing missing). Apt through this machine's Debian mirror, pip through PyPI
# (no local wheel directory: a fresh machine has none). Every chroot is a fresh copy of one base
# tarball, unmounted and removed after its run, also on failure.
#   sudo bench/setup_time.sh main h/setup h/setup main     # A B B A: interleaved, the same hour
# SETUP_ARGS: setup.sh's options (e.g. "--with test": what `make test` and CI install first).
# THEN: a command run in the chroot after the set-up, timed the same way (stamped lines), e.g.
#   THEN="make lab-up && make sweep"   the README's first two commands on the fresh machine: E1
# quick's results, the lab VM booted from the chroot's own root (stopped after, `linklab vm stop`).
# One line per run on stdout and appended to $WORK/times.txt: rev, seconds (of them: the Debian
# packages'), seconds of the rerun, Debian packages installed, the venv's size, `linklab doctor`'s
# exit code there; setup.sh's output, each line stamped with its second, in $WORK/run*.log.
set -euo pipefail
SETUP_ARGS=${SETUP_ARGS:-}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "setup_time: needs root (chroot, mounts)" >&2; exit 4; }
[ $# -gt 0 ] || { echo "usage: $0 REV [REV...]" >&2; exit 2; }
WORK=${WORK:-/tmp/linklab-setup-time}
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
mkdir -p "$WORK"
if [ ! -s "$WORK/base.tar" ]; then
  echo "setup_time: building the base chroot ($SUITE, minbase) into $WORK/base.tar"
  mmdebstrap --quiet --format=tar --variant=minbase --include=python3,python3-venv,make,git,ca-certificates \
    "$SUITE" "$WORK/base.tar.part" http://deb.debian.org/debian
  mv "$WORK/base.tar.part" "$WORK/base.tar"
fi

root=""
cleanup() {
  [ -n "$root" ] || return 0
  for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$root"
  root=""
}
trap cleanup EXIT

for rev in "$@"; do
  n=$(date +%s)
  root=$(mktemp -d "$WORK/chroot.XXXX")
  tar -C "$root" -xf "$WORK/base.tar"
  mount -t proc proc "$root/proc"; mount -t sysfs sys "$root/sys"
  mount --bind /dev "$root/dev"; mount --bind /dev/pts "$root/dev/pts"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # This machine's trust store (its network may sit behind a TLS proxy), not its pip settings.
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$root/root/linklab"
  git archive "$rev" | tar -C "$root/root/linklab" -x
  # Each line of setup.sh's output stamped with the seconds since the run began: where the time went.
  run() { local t=$(date +%s.%N)
          chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
            bash -c 'cd /root/linklab && bash scripts/setup.sh "$@"' _ $SETUP_ARGS 2>&1 |
            while IFS= read -r l; do printf '%6.1f %s\n' "$(echo "$(date +%s.%N) - $t" | bc)" "$l"; done \
            >> "$WORK/run$n.log"; }
  echo "== $rev ($(git rev-parse --short "$rev")) $(date -u +%FT%TZ)" > "$WORK/run$n.log"
  t0=$(date +%s.%N); run; t1=$(date +%s.%N); run; t2=$(date +%s.%N)
  # The steps: Debian packages (until the virtualenv is made), then the Python side.
  debian=$(awk '/creating virtualenv/ {print $1; exit}' "$WORK/run$n.log")
  # What `linklab doctor` says there: exit 0 when the main job can run (in the lab VM here).
  doctor=0
  chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    bash -c 'cd /root/linklab && .venv/bin/python -m linklab doctor' >> "$WORK/run$n.log" 2>&1 || doctor=$?
  then_s="" then_rc=""
  if [ -n "${THEN:-}" ]; then
    t3=$(date +%s.%N)
    then_rc=0
    chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      bash -c "cd /root/linklab && $THEN" 2>&1 |
      while IFS= read -r l; do printf '%6.1f %s\n' "$(echo "$(date +%s.%N) - $t3" | bc)" "$l"; done \
      >> "$WORK/run$n.log" || then_rc=$?
    then_s=$(echo "$(date +%s.%N) - $t3" | bc)
    chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
      bash -c 'cd /root/linklab && .venv/bin/python -m linklab vm stop' >> "$WORK/run$n.log" 2>&1 || true
  fi
  pkgs=$(chroot "$root" dpkg-query -W -f='${Status}\n' | grep -c 'install ok installed')
  venv=$(du -sm "$root/root/linklab/.venv" | cut -f1)
  line=$(printf '%s %s%s first %.0f s (Debian packages %.0f s, then Python), rerun %.1f s, %s Debian packages, venv %s MiB, doctor exit %s' \
    "$rev" "$(git rev-parse --short "$rev")" "${SETUP_ARGS:+ ($SETUP_ARGS)}" "$(echo "$t1 - $t0" | bc)" "${debian:-0}" "$(echo "$t2 - $t1" | bc)" "$pkgs" "$venv" "$doctor")
  [ -n "$then_s" ] && line=$(printf '%s; then (%s) %.0f s, exit %s' "$line" "$THEN" "$then_s" "$then_rc")
  echo "$line" | tee -a "$WORK/times.txt"
  cleanup
done
