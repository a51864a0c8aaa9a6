#!/bin/sh
# Installs the Debian packages the build and tests need, when missing.
# Runs apt-get as root (or through sudo); prints nothing when all is there.
set -e
need="cmake make gcc clang pkg-config libsodium-dev libcmocka-dev python3 python3-numpy python3-sklearn"
[ -n "$RALLY_DEPS_EXTRA" ] && need="$need $RALLY_DEPS_EXTRA"
missing=""
for p in $need; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
