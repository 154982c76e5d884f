# apt-quiet.sh - sourced by scripts/slurm.sh and scripts/postgres.sh.
#
# tw_apt_quiet TAG PKG...  installs PKG... from Debian's packages without
# starting any daemon they ship (a policy-rc.d that refuses, only when the
# admin has none of their own), waiting up to 10 minutes for the dpkg
# lock.  Quiet on success; on failure prints apt's last 20 lines to stderr
# and returns apt-get's status.
tw_apt_quiet() {
  local tag=$1
  shift
  local rc=0 made_policy=0 aptlog
  aptlog=$(mktemp "/tmp/tw-$tag-apt.XXXXXX")
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  { apt-get -o DPkg::Lock::Timeout=600 -qq update &&
    apt-get -o DPkg::Lock::Timeout=600 -y -qq install --no-install-recommends "$@"; } \
    >"$aptlog" 2>&1 || rc=$?
  [ $made_policy = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ $rc != 0 ] && tail -20 "$aptlog" >&2
  rm -f "$aptlog"
  return $rc
}
