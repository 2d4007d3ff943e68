#!/usr/bin/env bash
# Prometheus and promtool for the observability tests (tests/integration/test_observability.py):
# Debian's package, installed once. `make test` runs this; it is quiet unless something fails,
# and where it cannot install (no root, no passwordless sudo, no apt) it stops at once with the
# command to run.
set -euo pipefail
command -v prometheus >/dev/null && command -v promtool >/dev/null && exit 0

install="apt-get update && apt-get install -y --no-install-recommends prometheus"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "make test needs Prometheus (promtool too); install it once with:" >&2
    echo "  sudo sh -c '$install'" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "make test needs Prometheus and promtool on PATH (no apt-get here to install them;" >&2
  echo "see https://prometheus.io/download/)" >&2
  exit 1
fi

log=$(mktemp)
policy=""
cleanup() {
  [ -z "$policy" ] || $sudo rm -f "$policy"
  rm -f "$log"
}
trap cleanup EXIT
# The package's service must not start (it would hold port 9090): a policy-rc.d refusing every
# start covers the install; where systemd runs anyway, the unit is stopped and disabled.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
fi
echo "installing Debian's prometheus package (for the observability tests)..."
if ! { $sudo apt-get update -qq &&
       $sudo env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "installing prometheus failed; to do it by hand: sudo sh -c '$install'" >&2
  exit 1
fi
if [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
