#!/bin/sh
# The main job, from a fresh clone: sftrace's reference workflow on a real
# Rust crate (examples/rust-bench: serde_json, regex, rayon, criterion).
# Installs dependencies, builds sftrace and cargo-sftrace, then one command,
# `cargo sftrace --bench resolver -r 'resolve|normalize|cache'`, builds the
# criterion bench with XRay sleds (into target/sftrace/, so target/ stays
# cached), records a one-second profiling run of each benchmark of the
# resolver's functions, converts the log to Parquet and Perfetto, shows the
# top functions, and says where the files are and how to open them. The
# steps are the ones in skills/sftrace/SKILL.md.
#
# Arguments are passed on to cargo sftrace: `-- --bench --test` runs each
# benchmark once instead of a one-second profiling run (a small trace; the
# tests use it).
#
# Environment (the tests use these; a fresh clone needs none):
#   SFTRACE    an sftrace binary to use (cargo-sftrace next to it); skips
#              installing and building
#   CRATE_DIR  the crate to build and trace (default examples/rust-bench)
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${SFTRACE:-}" ]; then
	sh "$ROOT/scripts/install-deps.sh"
	sh "$ROOT/scripts/install-rust-deps.sh"
	make -C "$ROOT" -j2 all
	SFTRACE="$ROOT/build/sftrace"
fi
# sftrace and cargo-sftrace below are the ones just built; cargo is rustup's.
PATH="$(cd "$(dirname "$SFTRACE")" && pwd):$HOME/.cargo/bin:$PATH"
cd "${CRATE_DIR:-$ROOT/examples/rust-bench}"

echo "== cargo sftrace: build the bench with XRay sleds (the first build takes about 2 minutes), record, convert"
cargo sftrace --bench resolver -r 'resolve|normalize|cache' "$@"
