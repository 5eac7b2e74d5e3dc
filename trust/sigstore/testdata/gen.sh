#!/usr/bin/env bash
# Regenerate the trust/sigstore fixtures with the REAL cosign and the REAL CNCF
# registry: start the registry on 127.0.0.1 (a random port, storage in a temp
# dir), push a small image (regtool/: plain HTTP, stdlib), sign it four ways
# with cosign
#   key-bundle   --key, Sigstore bundle (tag schema: no referrers API)
#   key-sig      --key, legacy simple-signing .sig
#   cert-bundle  --key --certificate --certificate-chain (test CA), bundle
#   cert-sig     the same, legacy .sig
# all with --tlog-upload=false (offline), and read the artifacts back.
#
#   trust/sigstore/testdata/gen.sh [OUTDIR]     (default: this directory)
#
# Binaries: COSIGN, REGISTRY, else .cache/bin/{cosign,registry} (make cosign
# registry); regtool and gencerts are built from this directory. The live test (TestRealCosign) runs this into a
# temp dir; the committed output is what the other tests read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
out=$(mkdir -p "${1:-$here}" && cd "${1:-$here}" && pwd)
COSIGN=${COSIGN:-$root/.cache/bin/cosign}
REGISTRY=${REGISTRY:-$root/.cache/bin/registry}
for b in "$COSIGN" "$REGISTRY"; do
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

(cd "$here/.." && go build -o "$tmp/regtool" ./testdata/regtool && go build -o "$tmp/gencerts" ./testdata/gencerts)
reg() { "$tmp/regtool" "$@"; }
port=$(reg freeport)
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
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
	sleep 0.1
done
host=127.0.0.1:$port

export COSIGN_PASSWORD= COSIGN_YES=true
mkdir -p "$tmp/home" "$tmp/docker"
# cosign without the user's config or keychain (go keeps its caches).
cosign() { HOME=$tmp/home DOCKER_CONFIG=$tmp/docker "$COSIGN" "$@"; }

mkdir -p "$out/keys" "$out/pki"
(cd "$tmp" && cosign generate-key-pair --output-key-prefix signer >/dev/null 2>&1)
(cd "$tmp" && cosign generate-key-pair --output-key-prefix other >/dev/null 2>&1)
cp "$tmp/signer.pub" "$out/keys/signer.pub"
cp "$tmp/other.pub" "$out/keys/other.pub"
"$tmp/gencerts" "$tmp/signer.pub" "$out/pki"

common=(--key "$tmp/signer.key" --tlog-upload=false --use-signing-config=false
	--allow-insecure-registry --allow-http-registry)
sign() { # NAME BUNDLE? CERT?
	local name=$1 bundle=$2 cert=$3 repo=$host/wharf/$1
	local dgst
	dgst=$(reg push "$repo:v1")
	local args=("${common[@]}" --new-bundle-format="$bundle")
	if [ "$cert" = true ]; then
		args+=(--certificate "$out/pki/leaf.pem" --certificate-chain "$out/pki/chain.pem")
	fi
	cosign sign "${args[@]}" "$repo@$dgst" >"$tmp/$name.log" 2>&1 || {
		cat "$tmp/$name.log" >&2
		exit 1
	}
	if [ "$bundle" = true ]; then
		reg bundle "$repo@$dgst" "$out/$name"
	else
		reg sig "$repo@$dgst" "$out/$name"
	fi
}
sign key-bundle true false
sign key-sig false false
sign cert-bundle true true
sign cert-sig false true
