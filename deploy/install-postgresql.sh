#!/usr/bin/env bash
# PostgreSQL's server binaries for the sink's tests (tests/integration/test_postgres_sink.py)
# and `python -m bench pgsink`: Debian's package, installed once (deploy/apt-install.sh).  The
# tests start their own throwaway server from /usr/lib/postgresql/<version>/bin
# (workers/sinks/pgserver.py); the package's own cluster (port 5432) is never started.
set -euo pipefail
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && exit 0
exec "$(dirname "$0")/apt-install.sh" postgresql "initdb and pg_ctl, for the PostgreSQL sink's tests"
