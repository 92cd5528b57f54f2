#!/bin/sh
# The Debian 12 root filesystem molecule's chroot instances are unpacked from: made once with
# debootstrap (~1.5 min) and cached as a tarball. Usage: make-rootfs.sh TARBALL
set -eu
tarball=$1
[ -s "$tarball" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=python3,systemd,udev,kmod,pciutils bookworm "$work/root" http://deb.debian.org/debian >"$work/log" 2>&1 \
  || { tail -20 "$work/log" >&2; exit 1; }
mkdir -p "$(dirname "$tarball")"
tar -C "$work/root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
