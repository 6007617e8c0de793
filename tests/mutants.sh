#!/usr/bin/env bash
# The planted-bug build (docs/torture.md, "How planted bugs are built"). The library's sources
# carry no planted bug: each is a patch in crates/redquorum/mutants/, applied here, in the order
# of its `series` file, to a scratch copy of the workspace (target/mut-src), which is built with
# `--cfg redquorum_mutants` in target/mut. One build serves every mutant: each patch guards its
# change with the runtime selector (`mutants::is_active`), and `redquorum mutants` picks one.
#
#   tests/mutants.sh                                   # build only
#   tests/mutants.sh mutants --only no-unwind --seed 2 # build, then run `redquorum` with these arguments
#   tests/mutants.sh cargo clippy --workspace --all-targets -- -D warnings   # any cargo command on the copy
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PATCHES="$ROOT/crates/redquorum/mutants"
STAGE="$ROOT/target/mut-stage" # rebuilt each time: the sources with every patch applied
COPY="$ROOT/target/mut-src"    # what cargo builds: only files that changed are rewritten, so
# an unchanged file keeps its time and cargo rebuilds only what changed (as in the worktree).

# One at a time: a second run (a sweep and a clippy on the copy) would rebuild the stage under it.
mkdir -p "$ROOT/target"
exec 9>"$ROOT/target/mut.lock"
flock 9
rm -rf "$STAGE"
mkdir -p "$STAGE" "$COPY"
# The worktree as it is (uncommitted changes and new files too), without what git ignores.
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
  xargs -0 cp --parents -t "$STAGE"
# target/ lies inside the repository: stop git apply from finding it (it would then apply
# paths relative to the repository's root, not to the copy).
export GIT_CEILING_DIRECTORIES="$ROOT/target"
while read -r patch; do
  case "$patch" in '' | '#'*) continue ;; esac
  if ! (cd "$STAGE" && git apply "$PATCHES/$patch"); then
    echo "mutants.sh: $patch does not apply (docs/torture.md, \"How planted bugs are built\")" >&2
    exit 1
  fi
done <"$PATCHES/series"
(cd "$STAGE" && find . -type f) | while IFS= read -r file; do
  if ! cmp -s "$STAGE/$file" "$COPY/$file"; then
    mkdir -p "$(dirname "$COPY/$file")"
    cp "$STAGE/$file" "$COPY/$file"
  fi
done
(cd "$COPY" && find . -path ./target -prune -o -type f -print) | while IFS= read -r file; do
  [ -e "$STAGE/$file" ] || rm -f "$COPY/$file"
done

# Its own target dir: other RUSTFLAGS would make cargo rebuild the normal build's artifacts.
export RUSTFLAGS="--cfg redquorum_mutants" CARGO_TARGET_DIR="$ROOT/target/mut"
# The mark that the patches are in (`redquorum::mutants::PATCHED`): a build with the cfg alone
# has the mutants' names but none of their bugs, and its `mutants` command refuses to run.
export REDQUORUM_MUTANTS_PATCHED=1
if [ "${1:-}" = cargo ]; then
  shift
  cd "$COPY" && exec cargo "$@"
fi
(cd "$COPY" && cargo build -q -p redquorum-cli)
exec 9>&- # the run needs no lock: its binary is built
[ "$#" -eq 0 ] || exec "$ROOT/target/mut/debug/redquorum" "$@"
