"""A block device's name, where the capture says it: blktrace names its per-CPU files after the device it traced
(`blktrace -d /dev/sda` writes `sda.blktrace.<cpu>`), so a set `sda.blktrace.*` names its disk. Shown beside the
device's major,minor ("8,0 (sda)"); a capture that names none (blkparse text, ftrace block events, a set named
otherwise, such as `keks.blktrace.*`) keeps the number alone."""

from __future__ import annotations

import re

# the per-CPU files of one capture as a source is named: "sda.blktrace.0", or a set "sda.blktrace.0-7"
_SET = re.compile(r"^(?P<name>.+)\.blktrace\.\d+(?:-\d+)?$")
# the kernel's names of block devices (a set named otherwise names no device)
_DEVICE = re.compile(
    r"^(?:sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+|nvme\d+n\d+|mmcblk\d+|loop\d+|dm-\d+|md\d+|ram\d+|zram\d+|nbd\d+"
    r"|rbd\d+|sr\d+|pmem\d+)$"
)
_SD = re.compile(r"^sd([a-z]+)$")
_LOOP = re.compile(r"^loop(\d+)$")


def _whole_disk(name: str) -> str | None:
    """The major,minor the kernel gives a disk of this name, where it is fixed: sdX (major 8 for the first 16 disks,
    16 minors each) and loopN (major 7)."""
    m = _SD.match(name)
    if m:
        index = 0
        for c in m[1]:
            index = index * 26 + (ord(c) - ord("a") + 1)
        index -= 1
        return f"8,{16 * index}" if index < 16 else None
    m = _LOOP.match(name)
    return f"7,{m[1]}" if m else None


def names(filename: str, devs: list[str]) -> dict[str, str]:
    """The devices of one source (major,minor as blkparse prints them) that its capture names: the traced disk of a
    blktrace set named after a device. The set's only device; of several (a partition's or a mapper's remaps too),
    the one the name's number is, when the kernel fixes it (sdX, loopN), else none."""
    m = _SET.match(filename)
    if not m or not _DEVICE.match(m["name"]):
        return {}
    name = m["name"]
    if len(set(devs)) == 1:
        return {devs[0]: name}
    disk = _whole_disk(name)
    return {disk: name} if disk in devs else {}


def label(dev: str, named: dict[str, str]) -> str:
    """A device as the views show it: "8,0 (sda)" when the capture names it, else "8,0 (device)"."""
    return f"{dev} ({named.get(dev, 'device')})"
