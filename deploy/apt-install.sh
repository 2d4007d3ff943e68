#!/usr/bin/env bash
# apt-install.sh PACKAGE PURPOSE: Debian's PACKAGE installed once for `make test` (PURPOSE says
# what for), its service never started (a policy-rc.d refuses every start during the install;
# where systemd runs anyway, the unit is stopped and disabled).  Quiet unless something fails;
# where it cannot install (no root, no passwordless sudo, no apt) it stops at once with the
# command to run.  install-prometheus.sh and install-postgresql.sh call it.
set -euo pipefail
package=$1
purpose=$2

install="apt-get update && apt-get install -y --no-install-recommends $package"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "make test needs Debian's $package ($purpose); install it once with:" >&2
    echo "  sudo sh -c '$install'" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "make test needs $package ($purpose), and there is no apt-get here to install it" >&2
  exit 1
fi

log=$(mktemp)
policy=""
cleanup() {
  [ -z "$policy" ] || $sudo rm -f "$policy"
  rm -f "$log"
}
trap cleanup EXIT
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
fi
echo "installing Debian's $package package ($purpose)..."
if ! { $sudo apt-get update -qq &&
       $sudo env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends "$package"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "installing $package failed; to do it by hand: sudo sh -c '$install'" >&2
  exit 1
fi
if [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now "$package.service" >/dev/null 2>&1 || true
fi
