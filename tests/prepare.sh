#!/usr/bin/env bash
# What tests/run.sh and tests/extended.sh need before their first test (sourced by both, from
# the repository's root): a fresh cargo home in CI, redis-server, a C compiler, python3, libfaketime.
# CI sees what a new machine sees: an empty cargo home (no registry, no downloaded crates) and
# no fetched servers, so a step that passes only where a warm cache hides a download fails in
# CI too. (The target directory of CI's fresh clone is empty anyway.)
if [ "${CI:-}" = true ]; then
  FRESH="$(mktemp -d)"
  trap 'rm -rf "$FRESH"' EXIT
  export CARGO_HOME="$FRESH/cargo-home" XDG_CACHE_HOME="$FRESH/cache"
  # A clean checkout builds each crate once: incremental caches would only take disk (gigabytes).
  export CARGO_INCREMENTAL=0
  echo "$(basename "$0"): CI: an empty CARGO_HOME and XDG_CACHE_HOME in $FRESH" >&2
fi
# Each step says when it ended.
STARTED=$SECONDS
took() { echo "$(basename "$0"): $1 done at $((SECONDS - STARTED)) s" >&2; }
tests/ensure-redis.sh
# A C compiler: the exec guard's tests build a small C fixture (a process whose main thread exits).
if ! command -v cc >/dev/null 2>&1; then
  echo "$(basename "$0"): no C compiler: installing gcc with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
fi
# Python 3: the HTTP service's standard-library client (tests/serve_client.py).
if ! command -v python3 >/dev/null 2>&1; then
  echo "$(basename "$0"): no python3: installing it with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null
fi
# libfaketime and a libc-malloc redis-server for the fast-clock scenario, which must run, not skip.
tests/ensure-faketime.sh
export REDQUORUM_REQUIRE_FAKETIME=1
