#!/bin/sh
# Installs what sftrace needs to build and test on Debian 12 (run as root,
# or with sudo available). Safe to re-run: does nothing when all is there.
set -eu

PKGS="make gcc clang llvm libelf-dev libdw-dev libiberty-dev libzstd-dev zlib1g-dev libisal-dev
libpcre2-dev libcmocka-dev libsqlite3-dev pkg-config protobuf-compiler python3 nodejs npm binutils
chromium libclang-rt-14-dev valgrind util-linux groff-base man-db
libseccomp-dev"
# Peers for bench/ (uftrace) are optional: install with BENCH=1.
if [ "${BENCH:-0}" = 1 ]; then PKGS="$PKGS uftrace"; fi

# aarch64: cross toolchain, qemu-user, and the CLI's libraries as Debian
# multiarch :arm64 packages (`make ARCH=aarch64`, tests/cases/test_aarch64.py).
# Not libisal-dev:arm64: it is not multi-arch and would replace the amd64 one.
ARM64_PKGS="qemu-user libc6-dev-arm64-cross libgcc-12-dev-arm64-cross binutils-aarch64-linux-gnu
libc6-dev:arm64 libelf-dev:arm64 libdw-dev:arm64 libiberty-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64
libpcre2-dev:arm64 libsqlite3-dev:arm64"
if [ "$(dpkg --print-architecture)" = amd64 ]; then
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		if [ "$(id -u)" = 0 ]; then dpkg --add-architecture arm64; else sudo dpkg --add-architecture arm64; fi
	fi
	PKGS="$PKGS $ARM64_PKGS"
fi

missing=""
for p in $PKGS; do
	# With a foreign architecture added, a name installed for both is
	# ambiguous to dpkg -s: ask for the native one then.
	dpkg -s "$p" >/dev/null 2>&1 || dpkg -s "$p:$(dpkg --print-architecture)" >/dev/null 2>&1 ||
		missing="$missing $p"
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
