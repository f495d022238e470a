#!/bin/sh
# First boot of an edge appliance, run once by edge-firstboot.service: installs the build the image
# carries (or a newer tarball in the boot partition's `edge` folder), with the edge.toml and
# secrets.env (NAME=value lines, e.g. TELEGRAM_BOT_TOKEN=123:abc) the owner put in that folder. The
# secrets are moved into systemd credentials and deleted from the boot partition, which anyone who holds
# the SD card can read.
# EDGE_BOOT and EDGE_ROOT point it at a directory tree instead (the tests do that).
set -eu
BOOT=${EDGE_BOOT:-/boot/firmware}
ROOT=${EDGE_ROOT:-/}
SOURCE="$BOOT/edge"
say() { echo "edge-firstboot: $*"; }

if [ ! -d "$SOURCE" ]; then
    say "no $SOURCE folder: nothing to install"
    exit 0
fi
# The build: one dropped into the folder (a newer one), else the one the image carries.
TARBALL=$(ls "$SOURCE"/edge-*-linux-"$(uname -m)".tar.zst 2>/dev/null | sort | tail -n 1 || true)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
if [ -n "$TARBALL" ]; then
    zstd -q -d -c "$TARBALL" | tar -C "$WORK" -xf -
    DIST="$WORK/edge"
elif [ -x "$ROOT/usr/local/lib/edge/dist/edge/edge" ]; then
    DIST="$ROOT/usr/local/lib/edge/dist/edge"
else
    say "no build found: put edge-<version>-linux-$(uname -m).tar.zst in $SOURCE"
    exit 1
fi

set -- --root "$ROOT" --dist "$DIST" --enable
[ -f "$SOURCE/edge.toml" ] && set -- "$@" --with-config "$SOURCE/edge.toml"
[ -f "$SOURCE/secrets.env" ] && set -- "$@" --secrets "$SOURCE/secrets.env"
"$DIST/edge" service install "$@"

mv "$SOURCE" "$BOOT/edge.installed"  # done: the next boot finds nothing to do
rm -rf "$ROOT/usr/local/lib/edge/dist"  # installed in /opt/edge now
if [ "$ROOT" = "/" ]; then
    systemctl disable edge-firstboot.service || true
fi
say "edge is installed; \`journalctl -u edge\` shows how it is doing"
