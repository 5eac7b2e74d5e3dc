#!/usr/bin/env bash
# The dependency-boundary check: arrows between wharf's rooms point down only
# (docs/architecture.md, "The arrows"). For every package it compares the wharf
# packages its non-test files import with the rooms it may import; checking the
# direct imports of every package keeps the layering transitively too.
# The benchmark suite (bench/, build tag `bench`) is listed with its tag.
# Tests may also import the test-support packages (TEST_SUPPORT); nothing else
# is relaxed for them, and product code never imports those.
# It is the one dependency check (make lint and make test run it).
set -euo pipefail
cd "$(dirname "$0")/.."

MOD=$(go list -m)
TEST_SUPPORT="internal/testregistry internal/hostile graph/internal/graphtest"

# allowed ROOM: the wharf packages (relative to the module) it may import.
allowed() {
	case $1 in
	api/types) echo "internal/imageref" ;;
	api/server) echo "api/types imagespec internal/imageref internal/sbom" ;;
	registry) echo "imagespec internal/imageref registry/hosts registry/transport registry/upload registry/blobs registry/listing registry/referrers registry/v1 trust internal/ctxio" ;;
	registry/upload) echo "registry/transport internal/ctxio" ;;
	registry/blobs) echo "registry/transport internal/ctxio" ;;
	registry/listing) echo "imagespec registry/transport" ;;
	registry/v1) echo "registry/hosts registry/transport" ;;
	registry/referrers) echo "imagespec registry/listing registry/transport trust" ;;
	registry/transport) echo "registry/hosts" ;;
	registry/hosts) echo "" ;;
	imagespec) echo "" ;;
	graph) echo "api/types imagespec internal/imageref graph/store graph/archive graph/contents graph/diff graph/packages graph/distribution graph/mirror graph/updates graph/internal/ahead internal/rootlock" ;;
	graph/contents) echo "api/types graph/contents/indexcache internal/decompress internal/gzindex internal/layerindex internal/layertoc internal/pair" ;;
	graph/packages) echo "api/types graph/contents internal/countio" ;;
	graph/diff) echo "api/types graph/contents graph/packages internal/layerindex internal/pair" ;;
	graph/contents/indexcache) echo "internal/atomicfile internal/gzindex internal/layerindex" ;;
	graph/store) echo "api/types imagespec graph/store/check graph/store/content graph/store/indexjson graph/store/listindex graph/store/migrate graph/store/record internal/ctxio internal/ocilayout internal/rootlock" ;;
	graph/store/content) echo "internal/atomicfile internal/ctxio internal/ocilayout" ;;
	graph/store/migrate) echo "graph/store/content internal/atomicfile" ;;
	graph/store/listindex) echo "" ;;
	graph/store/check) echo "api/types graph/store/content internal/ocilayout" ;;
	graph/store/indexjson) echo "internal/ocilayout" ;;
	graph/store/record) echo "api/types imagespec" ;;
	graph/archive) echo "api/types imagespec graph/store internal/decompress internal/ocilayout internal/safetar" ;;
	graph/distribution) echo "api/types imagespec graph/store registry trust internal/countio internal/imageref internal/safetar internal/semvertag" ;;
	graph/mirror) echo "api/types imagespec graph/distribution internal/ocilayout internal/semvertag" ;;
	graph/updates) echo "api/types imagespec graph/store graph/distribution internal/semvertag internal/atomicfile" ;;
	daemon) echo "api/server api/types graph graph/updates registry daemon/metrics internal/dockerconfig internal/privdir internal/rootlock internal/atomicfile trust trust/policy trust/sigstore trust/notation" ;;
	daemon/metrics) echo "" ;;
	client) echo "api/types internal/privdir" ;;
	internal/privdir) echo "" ;;
	internal/atomicfile) echo "" ;;
	internal/safetar) echo "" ;;
	internal/dockerconfig) echo "internal/atomicfile" ;;
	internal/semvertag) echo "" ;;
	internal/ocilayout) echo "internal/ctxio internal/safetar" ;;
	internal/decompress) echo "" ;;
	internal/layertoc) echo "internal/decompress" ;;
	internal/gzindex) echo "internal/decompress internal/gzindex/flate" ;;
	internal/gzindex/flate) echo "" ;;
	internal/rootlock) echo "" ;;
	internal/ctxio) echo "" ;;
	internal/pair) echo "" ;;
	internal/countio) echo "" ;;
	internal/sbom) echo "api/types" ;;
	internal/layerindex) echo "internal/safetar" ;;
	internal/imageref) echo "" ;;
	trust) echo "" ;;
	trust/sigstore) echo "trust" ;;
	trust/notation) echo "trust" ;;
	trust/policy) echo "api/types trust trust/sigstore trust/notation" ;;
	cmd/wharfd) echo "daemon" ;;
	cmd/wharf) echo "client api/types imagespec internal/privdir cmd/wharf/internal/creds cmd/wharf/internal/formatter cmd/wharf/internal/manpage cmd/wharf/internal/syncyaml cmd/wharf/internal/untar" ;;
	cmd/wharf/internal/creds) echo "api/types internal/dockerconfig" ;;
	cmd/wharf/internal/syncyaml) echo "client" ;;
	cmd/wharf/internal/manpage) echo "" ;;
	cmd/wharf/internal/untar) echo "" ;;
	cmd/wharf/internal/formatter) echo "api/types client" ;;
	internal/testregistry) echo "" ;;
	internal/hostile) echo "internal/testregistry" ;;
	graph/internal/graphtest) echo "api/types graph/store" ;;
	graph/internal/ahead) echo "" ;;
	integration-cli) echo "internal/testregistry client api/types" ;;
	bench) echo "graph registry client api/types internal/testregistry internal/hostile internal/gzindex internal/layertoc" ;;
	*) echo "UNKNOWN" ;;
	esac
}

# test_wiring ROOM: what a room's tests may import beyond its code, to wire
# the rooms below it as the daemon does (graph's tests build the registry
# client graph/distribution drives).
test_wiring() {
	case $1 in
	graph) echo "registry" ;;
	esac
}

violations=0
seen=0
while read -r pkg kind imports; do
	room=${pkg#"$MOD"/}
	# The check guards itself: cmd/wharf must be seen to import client, or
	# a go list that printed nothing would pass every package.
	[ "$room $kind" = "cmd/wharf code" ] && [[ " $imports " == *" $MOD/client "* ]] && seen=1
	[ "$pkg" = "$MOD" ] && room=.
	ok=$(allowed "$room")
	if [ "$ok" = UNKNOWN ]; then
		[ "$kind" = test ] && continue # reported once, for its code
		echo "depcheck: $room is not a room in the table (add it to scripts/depcheck.sh and docs/architecture.md)" >&2
		violations=$((violations + 1))
		continue
	fi
	[ "$kind" = test ] && ok="$ok $TEST_SUPPORT $room $(test_wiring "$room")"
	for imp in $imports; do
		case $imp in "$MOD"/*) ;; *) continue ;; esac
		dep=${imp#"$MOD"/}
		if [[ " $ok " != *" $dep "* ]]; then
			echo "depcheck: $room ($kind) imports $dep; it may import only: ${ok:-no wharf package}" >&2
			violations=$((violations + 1))
		fi
	done
done < <(go list -f '{{.ImportPath}} code {{join .Imports " "}}
{{.ImportPath}} test {{join .TestImports " "}} {{join .XTestImports " "}}' -tags bench ./...)

if [ "$seen" -ne 1 ]; then
	echo "depcheck: go list did not show cmd/wharf importing client; nothing was checked" >&2
	exit 1
fi

if [ "$violations" -ne 0 ]; then
	echo "depcheck: $violations import(s) cross a boundary" >&2
	exit 1
fi
echo "depcheck: every import points down"
