#!/usr/bin/env bash
# The set-up's time on a fresh Debian: each git revision named is unpacked into a throwaway chroot
# (mmdebstrap, this machine's suite, variant minbase plus what a clone needs: python3, python3-venv,
# make, git, ca-certificates) and `bash scripts/setup.sh` timed there, then timed again (the
# idempotent case: nothing missing). Apt through this machine's Debian mirror, pip through PyPI
# (no local wheel directory: a fresh machine has none). Every chroot is a fresh copy of one base
# tarball, unmounted and removed after its run, also on failure.
#   sudo bench/setup_time.sh main h/setup h/setup main     # A B B A: interleaved, the same hour
# One line per run on stdout and appended to $WORK/times.txt: label, rev, seconds, seconds of the
# rerun, Debian packages installed, the venv's size.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "setup_time: needs root (chroot, mounts)" >&2; exit 4; }
[ $# -gt 0 ] || { echo "usage: $0 REV [REV...]" >&2; exit 2; }
WORK=${WORK:-/tmp/linklab-setup-time}
SUITE=$(. /etc/os-release && echo "$VERSION_CODENAME")
mkdir -p "$WORK"
if [ ! -s "$WORK/base.tar" ]; then
  echo "setup_time: building the base chroot ($SUITE, minbase) into $WORK/base.tar"
  mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,make,git,ca-certificates \
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
  run() { chroot "$root" env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
            bash -c 'cd /root/linklab && bash scripts/setup.sh' >> "$WORK/run$n.log" 2>&1; }
  echo "== $rev ($(git rev-parse --short "$rev")) $(date -u +%FT%TZ)" > "$WORK/run$n.log"
  t0=$(date +%s.%N); run; t1=$(date +%s.%N); run; t2=$(date +%s.%N)
  pkgs=$(chroot "$root" dpkg-query -W -f='${Status}\n' | grep -c 'install ok installed')
  venv=$(du -sm "$root/root/linklab/.venv" | cut -f1)
  line=$(printf '%s %s first %.0f s, rerun %.1f s, %s Debian packages, venv %s MiB' "$rev" \
    "$(git rev-parse --short "$rev")" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$pkgs" "$venv")
  echo "$line" | tee -a "$WORK/times.txt"
  cleanup
done
