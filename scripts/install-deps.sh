#!/bin/sh
# Installs what sftrace needs to build and test on Debian 12 (run as root,
# or with sudo available). Safe to re-run: does nothing when all is there.
set -eu

PKGS="make gcc clang llvm libelf-dev libdw-dev libiberty-dev libzstd-dev zlib1g-dev libisal-dev
libpcre2-dev libcmocka-dev libsqlite3-dev pkg-config protobuf-compiler python3 nodejs npm binutils
chromium libclang-rt-14-dev valgrind util-linux groff-base man-db"
# Peers for bench/ (uftrace) are optional: install with BENCH=1.
if [ "${BENCH:-0}" = 1 ]; then PKGS="$PKGS uftrace"; fi

missing=""
for p in $PKGS; do
	dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
# node/npm may come from outside Debian's packages on some machines.
case "$missing" in *nodejs*|*npm*)
	if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
		missing=$(echo "$missing" | sed 's/ nodejs//; s/ npm//')
	fi;;
esac
if [ -n "$missing" ]; then
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	echo "install-deps: installing:$missing"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
echo "install-deps: ok"
