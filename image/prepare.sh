#!/bin/sh
# Turn a stock Raspberry Pi OS Lite 64-bit image into an edge appliance image (run as root on Linux):
#   image/prepare.sh 2024-11-19-raspios-bookworm-arm64-lite.img build/edge-0.1.0-linux-aarch64.tar.zst
# It adds the build and an `edge` folder to the boot partition, and a one-shot first-boot service to the
# root partition. Nothing else in the image changes, so the same inputs give the same image.
set -eu
IMAGE=$1
TARBALL=$2
MOUNT=$(mktemp -d)
DEVICE=$(losetup --find --show --partscan "$IMAGE")
cleanup() {
    umount "$MOUNT/boot" "$MOUNT/root" 2>/dev/null || true
    losetup -d "$DEVICE"
    rm -rf "$MOUNT"
}
trap cleanup EXIT
mkdir -p "$MOUNT/boot" "$MOUNT/root"
mount "${DEVICE}p1" "$MOUNT/boot"
mount "${DEVICE}p2" "$MOUNT/root"

mkdir -p "$MOUNT/boot/edge" "$MOUNT/root/usr/local/lib/edge/dist"
# Unpacked here, where zstd is at hand; Raspberry Pi OS Lite need not have it.
zstd -q -d -c "$TARBALL" | tar -C "$MOUNT/root/usr/local/lib/edge/dist" -xf -
cat > "$MOUNT/boot/edge/README.txt" <<'TEXT'
Put two files in this folder before the first boot:
  edge.toml    your settings (`edge init` writes a commented one; at least [provider] and [telegram])
  secrets.env  one secret per line, e.g. TELEGRAM_BOT_TOKEN=123456:ABC...
On the first boot edge is installed, the secrets are moved into systemd credentials and deleted from here.
TEXT
HERE=$(dirname "$0")
install -D -m 0755 "$HERE/firstboot.sh" "$MOUNT/root/usr/local/lib/edge/firstboot.sh"
install -D -m 0644 "$HERE/edge-firstboot.service" "$MOUNT/root/etc/systemd/system/edge-firstboot.service"
mkdir -p "$MOUNT/root/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/edge-firstboot.service \
    "$MOUNT/root/etc/systemd/system/multi-user.target.wants/edge-firstboot.service"
echo "prepared $IMAGE: flash it, then put edge.toml and secrets.env in the boot partition's edge folder"
