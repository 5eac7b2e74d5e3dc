#!/usr/bin/env bash
# Regenerate the trust/sigstore fixtures with the REAL cosign and the REAL CNCF
# registry: start the registry on 127.0.0.1 (a random port, storage in a temp
# dir), push a small image with crane, sign it four ways with cosign
#   key-bundle   --key, Sigstore bundle (tag schema: no referrers API)
#   key-sig      --key, legacy simple-signing .sig
#   cert-bundle  --key --certificate --certificate-chain (test CA), bundle
#   cert-sig     the same, legacy .sig
# all with --tlog-upload=false (offline), and read the artifacts back.
#
#   trust/sigstore/testdata/gen.sh [OUTDIR]     (default: this directory)
#
# Binaries: COSIGN, REGISTRY, CRANE, else .cache/bin/{cosign,registry,crane}
# (make cosign registry). The live test (TestRealCosign) runs this into a
# temp dir; the committed output is what the other tests read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
COSIGN=${COSIGN:-$root/.cache/bin/cosign}
REGISTRY=${REGISTRY:-$root/.cache/bin/registry}
CRANE=${CRANE:-$root/.cache/bin/crane}
for b in "$COSIGN" "$REGISTRY" "$CRANE"; do
	[ -x "$b" ] || { echo "gen.sh: $b missing (make cosign registry)" >&2; exit 1; }
done

tmp=$(mktemp -d)
regpid=
cleanup() {
	if [ -n "$regpid" ]; then
		kill "$regpid" 2>/dev/null || true
		wait "$regpid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
cat >"$tmp/config.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $tmp/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
YML
"$REGISTRY" serve "$tmp/config.yml" >"$tmp/registry.log" 2>&1 &
regpid=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break
	sleep 0.1
done
host=127.0.0.1:$port

# A small image: one layer with one file.
mkdir -p "$tmp/layer" && echo "wharf trust fixture" >"$tmp/layer/hello.txt"
tar -C "$tmp/layer" -cf "$tmp/layer.tar" hello.txt
export COSIGN_PASSWORD= COSIGN_YES=true
mkdir -p "$tmp/home" "$tmp/docker"
# cosign without the user's config or keychain (go keeps its caches).
cosign() { HOME=$tmp/home DOCKER_CONFIG=$tmp/docker "$COSIGN" "$@"; }

mkdir -p "$out/keys" "$out/pki"
(cd "$tmp" && cosign generate-key-pair --output-key-prefix signer >/dev/null 2>&1)
(cd "$tmp" && cosign generate-key-pair --output-key-prefix other >/dev/null 2>&1)
cp "$tmp/signer.pub" "$out/keys/signer.pub"
cp "$tmp/other.pub" "$out/keys/other.pub"
(cd "$here/.." && go run ./testdata/gencerts "$tmp/signer.pub" "$out/pki")

common=(--key "$tmp/signer.key" --tlog-upload=false --use-signing-config=false
	--allow-insecure-registry --allow-http-registry)
sign() { # NAME BUNDLE? CERT?
	local name=$1 bundle=$2 cert=$3 repo=$host/wharf/$1
	"$CRANE" append -f "$tmp/layer.tar" -t "$repo:v1" >/dev/null 2>&1
	local dgst
	dgst=$("$CRANE" digest "$repo:v1")
	local args=("${common[@]}" --new-bundle-format="$bundle")
	if [ "$cert" = true ]; then
		args+=(--certificate "$out/pki/leaf.pem" --certificate-chain "$out/pki/chain.pem")
	fi
	cosign sign "${args[@]}" "$repo@$dgst" >"$tmp/$name.log" 2>&1 || {
		cat "$tmp/$name.log" >&2
		exit 1
	}
	mkdir -p "$out/$name"
	local tag=${dgst/:/-} mani layer
	if [ "$bundle" = true ]; then
		# The tag schema's referrers index: the manifest whose artifactType
		# is a Sigstore bundle, its one layer the bundle JSON.
		mani=$("$CRANE" manifest "$repo:$tag" |
			jq -r '[.manifests[] | select(.artifactType | startswith("application/vnd.dev.sigstore.bundle"))][0].digest')
		"$CRANE" manifest "$repo@$mani" >"$tmp/$name.manifest.json"
		format=sigstore-bundle
	else
		mani=$("$CRANE" digest "$repo:$tag.sig")
		"$CRANE" manifest "$repo:$tag.sig" >"$tmp/$name.manifest.json"
		format=cosign-simplesigning
	fi
	layer=$(jq -r '.layers[0].digest' "$tmp/$name.manifest.json")
	"$CRANE" blob "$repo@$layer" >"$out/$name/payload"
	jq --arg f "$format" --arg d "$mani" --arg s "$dgst" --arg ref "$repo:v1" \
		'{format: $f, digest: $d, subject: $s, reference: $ref,
		  mediaType: .layers[0].mediaType, annotations: (.layers[0].annotations // {})}' \
		"$tmp/$name.manifest.json" >"$out/$name/artifact.json"
	echo "gen.sh: $name: $format $mani over $dgst"
}
sign key-bundle true false
sign key-sig false false
sign cert-bundle true true
sign cert-sig false true
