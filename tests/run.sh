#!/usr/bin/env bash
# The test command: installs what it needs, then runs every test on real redis-server nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
tests/ensure-redis.sh
# Unit, integration (real nodes) and doc tests of the whole workspace.
cargo test --workspace --all-targets
cargo test --workspace --doc
# The library without its default `tls` feature (refuses rediss:// instead of connecting in plain text).
cargo test -p redquorum --no-default-features --lib
# The libraries' API docs build without warnings (broken links, missing docs).
RUSTDOCFLAGS="-D warnings" cargo doc -p redquorum -p redquorum-harness --no-deps
