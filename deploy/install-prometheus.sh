#!/usr/bin/env bash
# Prometheus and promtool for the observability tests (tests/integration/test_observability.py):
# Debian's package, installed once (deploy/apt-install.sh; its service would hold port 9090).
set -euo pipefail
command -v prometheus >/dev/null && command -v promtool >/dev/null && exit 0
exec "$(dirname "$0")/apt-install.sh" prometheus "Prometheus and promtool, for the observability tests"
