#!/bin/sh
# Installs the Rust crates that examples/rust-bench builds against offline
# (Debian's librust-*-dev packages put their sources in
# /usr/share/cargo/registry; the crate's .cargo/config.toml points cargo
# there). Run as root, or with sudo available. Safe to re-run: does nothing
# when all is there. rustc/cargo themselves come with the machine (rustup).
set -eu

PKGS="librust-criterion-dev librust-regex-dev librust-serde-json-dev librust-rayon-dev
librust-serde-derive-dev"

missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	echo "install-rust-deps: installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# Not fatal, so that install-deps.sh may call this on machines without Rust.
if ! command -v cargo >/dev/null 2>&1 && [ ! -x "$HOME/.cargo/bin/cargo" ]; then
	echo "install-rust-deps: warning: cargo not found; examples/rust-bench needs a Rust toolchain (rustup)" >&2
fi
echo "install-rust-deps: ok"
