#!/bin/sh
# deb-version.sh DESCRIBE [COMMIT_TIME]: the version `git describe --always
# --dirty` gave the binaries, as a Debian version (deb-version(7)).
#   v1.2.3                 -> 1.2.3
#   v1.2.3-4-gabc1234-dirty -> 1.2.3+4.gabc1234.dirty
#   abc1234 (no tag yet)   -> 0~git20261204191000.abc1234 (COMMIT_TIME's digits)
# A Debian version must start with a digit, and a hyphen would begin a Debian
# revision, so every character outside [A-Za-z0-9.+~] becomes a dot.
set -eu
v=${1#v}
# No tag: describe gives the abbreviated commit (which may start with a
# digit), sorted by its commit time under any tagged version.
if printf '%s\n' "$v" | grep -Eqx '[0-9a-f]{7,40}(-dirty)?' || ! printf '%s\n' "$v" | grep -q '^[0-9]'; then
	ts=$(printf '%s' "${2:-}" | tr -cd '0-9' | cut -c1-14)
	v="0~git${ts:+$ts.}$v"
fi
printf '%s\n' "$v" | sed -e 's/-\([0-9][0-9]*\)-g/+\1.g/' -e 's/[^A-Za-z0-9.+~]/./g'
