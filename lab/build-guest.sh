#!/usr/bin/env bash
# Builds the lab's guest once: a Debian bookworm root filesystem with the kernel, its headers and every recorder
# (trace-cmd, blktrace, perf, bcc), as an ext4 image, plus that kernel and its initrd beside it. Cached in
# $LAB_CACHE (default ~/.cache/stallscope-lab); rebuilt only when this script or the package list changes.
# Needs root, debootstrap and e2fsprogs on the host, and Debian's package mirror (as apt has it).
set -euo pipefail
LAB_CACHE=${LAB_CACHE:-$HOME/.cache/stallscope-lab}
MIRROR=${LAB_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
PACKAGES="linux-image-amd64 linux-headers-amd64 initramfs-tools trace-cmd blktrace fio xfsprogs e2fsprogs \
util-linux procps kmod dmsetup linux-perf bpfcc-tools python3 coreutils"
here=$(cd "$(dirname "$0")" && pwd)
stamp_want=$(cat "$0" "$here/guest/lab-init" | sha256sum | cut -c1-16)
mkdir -p "$LAB_CACHE"
cd "$LAB_CACHE"
if [ -f guest.stamp ] && [ "$(cat guest.stamp)" = "$stamp_want" ] && [ -f rootfs.img ] && [ -f vmlinuz ]; then
	echo "lab: guest cached in $LAB_CACHE ($(cat kernel.version))"
	exit 0
fi
for tool in debootstrap mkfs.ext4 qemu-system-x86_64; do
	command -v "$tool" >/dev/null || { echo "lab: $tool is missing (apt-get install debootstrap e2fsprogs qemu-system-x86)" >&2; exit 1; }
done

rootfs=$LAB_CACHE/rootfs
cleanup() { for m in proc sys dev; do mountpoint -q "$rootfs/$m" && umount -l "$rootfs/$m"; done; true; }
trap cleanup EXIT
if [ ! -x "$rootfs/usr/bin/apt-get" ]; then
	rm -rf "$rootfs"
	debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR"
fi
mountpoint -q "$rootfs/proc" || mount -t proc proc "$rootfs/proc"
mountpoint -q "$rootfs/sys" || mount -t sysfs sys "$rootfs/sys"
mountpoint -q "$rootfs/dev" || mount --bind /dev "$rootfs/dev"
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$rootfs/usr/sbin/policy-rc.d"
chmod +x "$rootfs/usr/sbin/policy-rc.d"
printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s-security %s-security main\n' \
	"$MIRROR" "$SUITE" "$MIRROR" "$SUITE" "${MIRROR%/debian}/debian" "$SUITE" > "$rootfs/etc/apt/sources.list"
chroot "$rootfs" /bin/sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	--no-install-recommends $PACKAGES && apt-get clean"
install -m 0755 "$here/guest/lab-init" "$rootfs/sbin/lab-init"
mkdir -p "$rootfs/lab" "$rootfs/out" "$rootfs/mnt/test"
echo "/dev/vda / ext4 rw 0 1" > "$rootfs/etc/fstab"
cleanup
trap - EXIT

version=$(ls "$rootfs/lib/modules" | sort -V | tail -1)
cp "$rootfs/boot/vmlinuz-$version" vmlinuz
cp "$rootfs/boot/initrd.img-$version" initrd.img
echo "$version" > kernel.version
rm -f rootfs.img
mkfs.ext4 -q -F -L labroot -E lazy_itable_init=0,lazy_journal_init=0 -d "$rootfs" rootfs.img 4G
echo "$stamp_want" > guest.stamp
echo "lab: guest built in $LAB_CACHE (kernel $version)"
