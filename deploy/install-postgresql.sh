#!/usr/bin/env bash
# PostgreSQL's server binaries for the sink's tests (tests/integration/test_postgres_sink.py)
# and `python -m bench pgsink`: Debian's package, installed once.  The tests start their own
# throwaway server from /usr/lib/postgresql/<version>/bin (workers/sinks/pgserver.py); the
# package's own cluster service is never started.  `make test` runs this; it is quiet unless
# something fails, and where it cannot install (no root, no passwordless sudo, no apt) it stops
# at once with the command to run.
set -euo pipefail
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && exit 0

install="apt-get update && apt-get install -y --no-install-recommends postgresql"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "make test needs PostgreSQL's server binaries (initdb, pg_ctl); install them once with:" >&2
    echo "  sudo sh -c '$install'" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null; then
  echo "make test needs PostgreSQL's server binaries (initdb, pg_ctl) under" >&2
  echo "/usr/lib/postgresql/<version>/bin or on PATH (no apt-get here to install them)" >&2
  exit 1
fi

log=$(mktemp)
policy=""
cleanup() {
  [ -z "$policy" ] || $sudo rm -f "$policy"
  rm -f "$log"
}
trap cleanup EXIT
# The package's cluster must not start (it would hold port 5432): a policy-rc.d refusing every
# start covers the install; where systemd runs anyway, the unit is stopped and disabled.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
fi
echo "installing Debian's postgresql package (for the PostgreSQL sink's tests)..."
if ! { $sudo apt-get update -qq &&
       $sudo env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends postgresql; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "installing postgresql failed; to do it by hand: sudo sh -c '$install'" >&2
  exit 1
fi
if [ -d /run/systemd/system ]; then
  $sudo systemctl disable --now postgresql.service >/dev/null 2>&1 || true
fi
