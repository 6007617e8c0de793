#!/usr/bin/env bash
# Installs redis-server from the distribution's packages when it is missing.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then
  exit 0
fi
echo "redis-server not found: installing it with apt-get" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq redis-server >/dev/null
# The package starts a system service on 6379; the tests start their own nodes.
redis-server --version
