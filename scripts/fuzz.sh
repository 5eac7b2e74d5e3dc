#!/usr/bin/env bash
# Runs every Fuzz* target in the repository for $FUZZTIME (default 10s) each.
# `go test -fuzz` accepts one target and one package per run, so we list them
# ourselves: one line "dir name" per target found in a *_test.go file.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-10s}
GO=${GO:-go}

mapfile -t targets < <(
	grep -rs --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' \
		--exclude-dir=.git --exclude-dir=.cache --exclude-dir=testdata . |
		sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*|\1 \2|' |
		sort -u
)

if [ ${#targets[@]} -eq 0 ]; then
	echo "fuzz: no Fuzz* targets found"
	exit 0
fi

failed=0
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	echo "== fuzz $dir $name ($FUZZTIME)"
	if ! "$GO" test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" "$dir"; then
		echo "FAIL: $dir $name" >&2
		failed=$((failed + 1))
	fi
done
echo "fuzz: ${#targets[@]} targets, $failed failed"
[ "$failed" -eq 0 ]
