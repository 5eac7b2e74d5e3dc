#!/usr/bin/env bash
# Prints a new directory on a memory filesystem for the tests' TMPDIR, or
# nothing (the caller keeps its TMPDIR) when there is none with room.
#
# Why: the suites create and delete tens of thousands of files (stores,
# registries, layers, image trees); on ext4 each new inode is searched for
# among recently deleted ones, and that kernel time was a fifth of the
# integration phase's CPU. On tmpfs the same suites run about 16 % faster.
#
# Room: the integration suites peaked at 0.55 GB under TMPDIR (4 at once);
# 2 GiB free leaves room for a bigger peak. Docker's default /dev/shm
# (64 MiB) is far below that and is never used.
set -euo pipefail
min_kb=$((2 * 1024 * 1024))
for d in /dev/shm; do
	[ -d "$d" ] && [ -w "$d" ] || continue
	[ "$(stat -f -c %T "$d" 2>/dev/null)" = tmpfs ] || continue
	free_kb=$(df -Pk "$d" | awk 'NR == 2 { print $4 }')
	[ "${free_kb:-0}" -ge "$min_kb" ] || continue
	mktemp -d "$d/wharf-test.XXXXXX"
	exit 0
done
