#!/bin/sh
# First boot of an edge appliance, run once by edge-firstboot.service: installs edge from the `edge`
# folder on the boot partition, where the image put the build and the owner put edge.toml and
# secrets.env (NAME=value lines, e.g. TELEGRAM_BOT_TOKEN=123:abc). The secrets are moved into systemd
# credentials and deleted from the boot partition, which anyone who holds the SD card can read.
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
TARBALL=$(ls "$SOURCE"/edge-*-linux-"$(uname -m)".tar.zst 2>/dev/null | sort | tail -n 1 || true)
if [ -z "$TARBALL" ]; then
    say "no edge-<version>-linux-$(uname -m).tar.zst in $SOURCE: put the build for this board there"
    exit 1
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
zstd -q -d -c "$TARBALL" | tar -C "$WORK" -xf -

set -- --root "$ROOT" --dist "$WORK/edge" --enable
[ -f "$SOURCE/edge.toml" ] && set -- "$@" --with-config "$SOURCE/edge.toml"
[ -f "$SOURCE/secrets.env" ] && set -- "$@" --secrets "$SOURCE/secrets.env"
"$WORK/edge/edge" service install "$@"

mv "$SOURCE" "$BOOT/edge.installed"  # done: the next boot finds nothing to do
if [ "$ROOT" = "/" ]; then
    systemctl disable edge-firstboot.service || true
fi
say "edge is installed; \`journalctl -u edge\` shows how it is doing"
