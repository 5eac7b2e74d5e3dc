#!/usr/bin/env bash
# The whole wharf story on one machine, nothing from the internet:
#   two real CNCF registries on 127.0.0.1, wharfd on a temp data-root and socket,
#   import -> images -> inspect -> push -> rmi -> inspect --remote,
#   the update check (a tag moved in the registry: images --check-remote;
#   1.1 pushed: images --check-remote --newer offers it to 1.0),
#   copy to the second registry (the same digest there, nothing stored),
#   the same through curl on the socket and through the docker CLI,
#   signature verification: an image signed by the real cosign (a Sigstore
#   bundle, a key pair of the demo's own), a second wharfd under a
#   containers-policy.json(5) policy that requires it: inspect --remote
#   reports it verified, wharf trust show names the scope, and the pull of an
#   unsigned image in that scope is refused.
# Exits non-zero when any expected step did not behave as expected.
#
#   make demo            (builds first)
#   KEEP=1 make demo     (keep the temp dir and its logs for a look afterwards)
set -uo pipefail # not -e: every step runs, failures are counted and reported

cd "$(dirname "$0")/.." || exit 1
REPO=$(pwd)
BIN="$REPO/bin"
REGISTRY_BIN="$REPO/.cache/bin/registry"
COSIGN_BIN="$REPO/.cache/bin/cosign"

# Bounded polls: both servers answer in well under a second; 20 s covers a
# loaded CI box (200 polls x 0.1 s).
POLLS=200

failures=0
failed_steps=()

heading() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
# show ARGS...: echo a command the way one would type it (quoted where needed).
show() {
	local line='$' a q="'\\''"
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:@=,+%-]+$ ]]; then
			line+=" $a"
		else
			line+=" '${a//\'/$q}'"
		fi
	done
	printf '%s\n' "$line"
}

# fail DESC: report and count a step that did not behave as expected.
fail() {
	echo "!! $1" >&2
	failures=$((failures + 1))
	failed_steps+=("$1")
	return 1
}

# ok DESC CMD...: run CMD (echoed), count a failure when it fails.
ok() {
	local desc=$1
	shift
	show "$@"
	"$@" || fail "expected to succeed: $desc"
}

# fails DESC CMD...: run CMD (echoed), count a failure when it succeeds.
fails() {
	local desc=$1
	shift
	show "$@"
	if "$@"; then
		fail "expected to fail: $desc"
		return
	fi
	echo "(failed, as expected)"
}

# check DESC WANT GOT: compare two strings.
check() {
	if [ "$2" = "$3" ]; then
		echo "ok: $1"
	else
		printf '   want %q\n   got  %q\n' "$2" "$3" >&2
		fail "$1"
	fi
}

# wait_up PID CMD...: poll CMD until it succeeds; give up when PID exits or
# after POLLS tries.
wait_up() {
	local pid=$1
	shift
	for _ in $(seq $POLLS); do
		"$@" >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# free_port prints a TCP port on 127.0.0.1 that nothing answers on. Another
# process can still take it before the registry binds it: the caller retries.
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

WORK=$(mktemp -d /tmp/wharf-demo.XXXXXX) || exit 1
SOCK="$WORK/wharf.sock" # short: unix socket paths are capped at 108 bytes
REGISTRY_PID=""
REGISTRY2_PID=""
WHARFD_PID=""
WHARFD2_PID=""

cleanup() {
	local pid
	for pid in "$WHARFD2_PID" "$WHARFD_PID" "$REGISTRY_PID" "$REGISTRY2_PID"; do
		[ -n "$pid" ] || continue
		kill "$pid" 2>/dev/null
		# wharfd and the registry stop on SIGTERM in milliseconds; give them 5 s.
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	if [ "${KEEP:-}" = 1 ]; then
		echo "kept $WORK (logs: registry.log, registry2.log, wharfd.log, wharfd-policy.log)"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

heading "Build wharfd, wharf, the CNCF registry and cosign"
# cosign is built once into .cache/bin (make cosign; minutes the first time).
ok "make build registry cosign" make --no-print-directory build registry cosign || exit 1

# start_registry NAME: start a CNCF registry storing under $WORK/NAME; sets
# REG (127.0.0.1:PORT) and STARTED_PID, or returns 1 with its log shown.
start_registry() {
	local name=$1 attempt port pid
	mkdir -p "$WORK/$name"
	for attempt in 1 2 3; do
		port=$(free_port) || break
		cat >"$WORK/$name/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $WORK/$name/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: wharf-demo-secret
EOF
		# The registry would export traces to a collector that is not there.
		OTEL_TRACES_EXPORTER=none OTEL_SDK_DISABLED=true \
			"$REGISTRY_BIN" serve "$WORK/$name/config.yml" >"$WORK/$name.log" 2>&1 &
		pid=$!
		# An early exit usually means the port was taken meanwhile: try another.
		if wait_up "$pid" curl -fsS "http://127.0.0.1:$port/v2/"; then
			REG="127.0.0.1:$port"
			STARTED_PID=$pid
			echo "$name: http://$REG  (storage $WORK/$name/storage)"
			return 0
		fi
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "$name did not come up on port $port (attempt $attempt)"
	done
	echo "!! $name did not start; its log:" >&2
	tail -20 "$WORK/$name.log" >&2
	return 1
}

heading "Start two CNCF registries (distribution v3) on 127.0.0.1"
# The second one receives the image wharf copy moves.
start_registry registry2 || exit 1
REGISTRY2_PID=$STARTED_PID
REG2=$REG
start_registry registry || exit 1
REGISTRY_PID=$STARTED_PID

heading "Start wharfd (in the background) on a temp data-root and socket"
# daemon.json shows the file form of the options; 127.0.0.0/8 is insecure
# (plain HTTP) by default anyway, as in dockerd.
cat >"$WORK/daemon.json" <<EOF
{
  "insecure-registries": ["$REG"],
  "max-concurrent-downloads": 3
}
EOF
cat "$WORK/daemon.json"
show wharfd --config-file "$WORK/daemon.json" --data-root "$WORK/data" -H "unix://$SOCK"
"$BIN/wharfd" --config-file "$WORK/daemon.json" --data-root "$WORK/data" -H "unix://$SOCK" \
	>"$WORK/wharfd.log" 2>&1 &
WHARFD_PID=$!
if ! wait_up "$WHARFD_PID" curl -fsS --unix-socket "$SOCK" http://d/_ping; then
	echo "!! wharfd did not start; its log:" >&2
	tail -20 "$WORK/wharfd.log" >&2
	exit 1
fi
echo "wharfd: unix://$SOCK  (data-root $WORK/data)"
export WHARF_HOST="unix://$SOCK"
wharf() { "$BIN/wharf" "$@"; }

heading "Make a small root filesystem tarball"
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/etc"
printf '#!/bin/sh\necho "hello from wharf"\n' >"$WORK/rootfs/bin/hello"
chmod 755 "$WORK/rootfs/bin/hello"
echo "wharf-demo" >"$WORK/rootfs/etc/hostname"
printf 'This image was imported by scripts/demo.sh.\n' >"$WORK/rootfs/README"
ok "create rootfs tar" tar -C "$WORK/rootfs" --owner=0 --group=0 --numeric-owner -cf "$WORK/hello.tar" .
tar -tvf "$WORK/hello.tar"

IMG="$REG/demo/hello:1.0"

heading "wharf import (with CMD and LABEL changes)"
ok "wharf import" wharf import \
	--change 'CMD ["/bin/hello"]' \
	--change 'LABEL org.opencontainers.image.title=hello demo=wharf' \
	--message "imported by the wharf demo" \
	"$WORK/hello.tar" "$IMG"

heading "wharf images"
ok "wharf images" wharf images

heading "wharf inspect (local)"
ok "wharf inspect" wharf inspect "$IMG"
local_id=$(wharf inspect --format '{{.Id}}' "$IMG" 2>/dev/null)
# The fields a local and a remote inspect must agree on (one BuildInspect).
SHARED='{{.Id}} {{.Created}} {{.Architecture}} {{.Os}} {{.Size}} {{json .Config}} {{json .RootFS}}'
local_shared=$(wharf inspect --format "$SHARED" "$IMG" 2>/dev/null)
local_cmd=$(wharf inspect --format '{{json .Config.Cmd}}' "$IMG" 2>/dev/null)
check "CMD from --change" '["/bin/hello"]' "$local_cmd"

heading "wharf push"
ok "wharf push" wharf push "$IMG"

heading "wharf rmi"
ok "wharf rmi" wharf rmi "$IMG"

heading "wharf inspect (local) — gone from the local store"
fails "local inspect after rmi" wharf inspect "$IMG"

heading "wharf inspect --remote — still in the registry, no layer downloaded"
ok "wharf inspect --remote" wharf inspect --remote "$IMG"

heading "wharf inspect --remote --format"
ok "wharf inspect --remote --format" wharf inspect --remote \
	--format '{{.Digest}} {{.Architecture}} {{json .Config.Labels}}' "$IMG"
remote_id=$(wharf inspect --remote --format '{{.Id}}' "$IMG" 2>/dev/null)
check "remote Id equals the Id before push" "$local_id" "$remote_id"
remote_shared=$(wharf inspect --remote --format "$SHARED" "$IMG" 2>/dev/null)
check "remote Created, platform, Size, Config and RootFS equal the local ones" "$local_shared" "$remote_shared"
echo "(the data-root holds no image now: $(wharf images -q | wc -l) local images)"

heading "wharf copy — registry to registry through wharfd, nothing stored locally"
ok "wharf copy" wharf copy "$IMG" "$REG2/demo/hello:1.0"
src_digest=$(wharf inspect --remote --format '{{.Digest}}' "$IMG" 2>/dev/null)
dst_digest=$(wharf inspect --remote --format '{{.Digest}}' "$REG2/demo/hello:1.0" 2>/dev/null)
[ -n "$dst_digest" ] || fail "no image at the second registry after wharf copy"
check "digest at the second registry equals the first's" "$src_digest" "$dst_digest"
check "copy stored nothing locally" 0 "$(wharf images -q | wc -l | tr -d ' ')"

heading "The same over the socket with curl"
url="http://d/v1.50/images/$IMG/json?remote=1"
show curl --unix-socket "$SOCK" "$url"
status=$(curl -sS --unix-socket "$SOCK" -o "$WORK/remote.json" -w '%{http_code}' "$url")
head -c 2000 "$WORK/remote.json"
echo
check "HTTP status of GET /images/{name}/json?remote=1" 200 "$status"
if [ -n "$remote_id" ] && grep -q "\"Id\":\"$remote_id\"" "$WORK/remote.json"; then
	echo "ok: same Id over the raw API"
else
	fail "raw API answer has \"Id\":\"$remote_id\""
fi

heading "The docker CLI, pointed at wharfd"
if command -v docker >/dev/null 2>&1; then
	export DOCKER_HOST="unix://$SOCK"
	ok "docker version" docker version
	ok "docker pull through wharfd" docker pull "$IMG"
	ok "docker images" docker images
	ok "docker image inspect" docker image inspect --format '{{.Id}} {{.Config.Cmd}}' "$IMG"
	unset DOCKER_HOST
else
	echo "docker CLI not on PATH: skipped"
fi

heading "Update check: wharf images --check-remote"
ok "wharf pull" wharf pull "$IMG"
ok "wharf images --check-remote" wharf images --check-remote "$REG/demo/hello"
check "the pulled image is current" current \
	"$(wharf images --check-remote --format '{{.RemoteStatus}}' "$IMG" 2>/dev/null)"

heading "Move the tag in the registry: another image as demo/hello:2.0, its manifest put as 1.0"
printf 'hello again from wharf\n' >"$WORK/rootfs/etc/motd"
ok "create a second rootfs tar" tar -C "$WORK/rootfs" --owner=0 --group=0 --numeric-owner -cf "$WORK/hello2.tar" .
ok "wharf import (2.0)" wharf import --change 'CMD ["/bin/hello"]' "$WORK/hello2.tar" "$REG/demo/hello:2.0"
ok "wharf push (2.0)" wharf push "$REG/demo/hello:2.0"
accept='application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'
show curl -fsS -H "Accept: $accept" -D headers -o manifest.json "http://$REG/v2/demo/hello/manifests/2.0"
curl -fsS -H "Accept: $accept" -D "$WORK/headers" -o "$WORK/manifest.json" "http://$REG/v2/demo/hello/manifests/2.0" ||
	fail "GET the 2.0 manifest"
mtype=$(tr -d '\r' <"$WORK/headers" | awk -F': ' 'tolower($1) == "content-type" { print $2 }')
ok "PUT it as 1.0" curl -fsS -X PUT -H "Content-Type: $mtype" --data-binary "@$WORK/manifest.json" \
	"http://$REG/v2/demo/hello/manifests/1.0"

heading "wharf images --check-remote — the local 1.0 is outdated now"
ok "wharf images --check-remote" wharf images --check-remote "$REG/demo/hello"
check "the moved tag is outdated" outdated \
	"$(wharf images --check-remote --format '{{.RemoteStatus}}' "$IMG" 2>/dev/null)"
show wharf images --check-remote --exit-code -q "$IMG"
wharf images --check-remote --exit-code -q "$IMG" >/dev/null 2>&1
check "--exit-code exits 1 when an image is outdated" 1 "$?"

heading "What changed, without pulling: wharf diff, ls and cat of the registry's image, pull --dry-run"
ok "wharf diff" wharf diff "local:$IMG" "remote:$IMG"
check "the diff names the file 2.0 added" added \
	"$(wharf diff --sections files --format '{{range .Files.Changes}}{{if eq .Path "/etc/motd"}}{{.Change}}{{end}}{{end}}' "local:$IMG" "remote:$IMG" 2>/dev/null)"
ok "wharf images --check-remote --diff" wharf images --check-remote --diff "$IMG"
ok "wharf ls --remote" wharf ls -l --remote "$IMG" /etc
check "wharf cat --remote reads the registry's file" "hello again from wharf" \
	"$(wharf cat --remote "$IMG" /etc/motd 2>/dev/null)"
ok "wharf pull --dry-run" wharf pull --dry-run "$IMG"
ok "wharf packages --remote" wharf packages --remote "$IMG"

heading "Newer versions: push 1.1, and wharf images --check-remote --newer offers it to 1.0"
ok "wharf tag (1.1)" wharf tag "$REG/demo/hello:2.0" "$REG/demo/hello:1.1"
ok "wharf push (1.1)" wharf push "$REG/demo/hello:1.1"
ok "wharf images --check-remote --newer" wharf images --check-remote --newer "$IMG"
check "1.0 is offered 1.1 (minor) and 2.0 (major), same shape" "1.1 2.0" \
	"$(wharf images --check-remote --newer --format '{{.NewerMinor}} {{.NewerMajor}}' "$IMG" 2>/dev/null)"

heading "Signatures: a key pair and a signed image (the real cosign, offline)"
# cosign runs without the user's config, keychain or a terminal: an empty
# password, no prompts, no transparency log, no Sigstore services.
mkdir -p "$WORK/keys" "$WORK/cosign-home"
cosign() {
	HOME="$WORK/cosign-home" DOCKER_CONFIG="$WORK/cosign-home" COSIGN_PASSWORD= COSIGN_YES=true \
		"$COSIGN_BIN" "$@"
}
ok "cosign version" cosign version --json
ok "cosign generate-key-pair" cosign generate-key-pair --output-key-prefix "$WORK/keys/demo"
SIGNED="$REG/signed/hello:1.0"
UNSIGNED="$REG/signed/unsigned:1.0"
ok "wharf tag (signed)" wharf tag "$REG/demo/hello:2.0" "$SIGNED"
ok "wharf push (signed)" wharf push "$SIGNED"
# Another image (the first rootfs), never signed.
ok "wharf import (unsigned)" wharf import --change 'CMD ["/bin/hello"]' "$WORK/hello.tar" "$UNSIGNED"
ok "wharf push (unsigned)" wharf push "$UNSIGNED"
signed_digest=$(wharf inspect --remote --format '{{.Digest}}' "$SIGNED" 2>/dev/null)
[ -n "$signed_digest" ] || fail "no digest for $SIGNED"
# cosign signs the digest, never a tag (a tag can move); --new-bundle-format
# stores a Sigstore bundle (the OCI referrers tag schema: distribution v3.1.2
# has no referrers API).
ok "cosign sign" cosign sign --key "$WORK/keys/demo.key" --new-bundle-format=true \
	--tlog-upload=false --use-signing-config=false --allow-insecure-registry --allow-http-registry \
	"$REG/signed/hello@$signed_digest"
ok "wharf inspect --remote --referrers" wharf inspect --remote --referrers \
	--format '{{range .Referrers}}{{.Source}} {{.ArtifactType}} {{.Digest}}\n{{end}}' "$SIGNED"

heading "wharf inspect --remote --verify — verify without a policy"
# The first wharfd has no policy: --verify looks at the signatures and
# reports them, but there is no trust root to verify them against.
ok "wharf inspect --remote --verify" wharf inspect --remote --verify --format '{{json .Trust}}' "$SIGNED"

heading "A signature policy (containers-policy.json(5)): signed/ and other/ need the demo key"
cat >"$WORK/policy.json" <<EOF
{
  "default": [{"type": "insecureAcceptAnything"}],
  "transports": {
    "docker": {
      "$REG/signed": [{"type": "sigstoreSigned", "keyPath": "$WORK/keys/demo.pub"}],
      "$REG/other": [{"type": "sigstoreSigned", "keyPath": "$WORK/keys/demo.pub",
                      "signedIdentity": {"type": "matchRepository"}}]
    }
  }
}
EOF
cat "$WORK/policy.json"

heading "Start a second wharfd with --signature-policy (its own data-root and socket)"
SOCK2="$WORK/wharf2.sock"
show wharfd --signature-policy "$WORK/policy.json" --insecure-registry "$REG" --data-root "$WORK/data2" -H "unix://$SOCK2"
"$BIN/wharfd" --signature-policy "$WORK/policy.json" --insecure-registry "$REG" --data-root "$WORK/data2" \
	-H "unix://$SOCK2" >"$WORK/wharfd-policy.log" 2>&1 &
WHARFD2_PID=$!
if wait_up "$WHARFD2_PID" curl -fsS --unix-socket "$SOCK2" http://d/_ping; then
	echo "wharfd: unix://$SOCK2  (data-root $WORK/data2, policy $WORK/policy.json)"
	export WHARF_HOST="unix://$SOCK2"

	heading "wharf trust show — the whole policy, then the scope that applies to one name"
	ok "wharf trust show" wharf trust show
	ok "wharf trust show NAME" wharf trust show "$SIGNED"
	check "scope of $SIGNED" "$REG/signed" \
		"$(wharf trust show --json "$SIGNED" 2>/dev/null | tr -d ' \n' | sed -n 's/.*"Scope":"\([^"]*\)".*/\1/p')"

	heading "wharf inspect --remote — under a policy every remote inspect verifies"
	ok "wharf inspect --remote (Trust)" wharf inspect --remote -f '{{json .Trust}}' "$SIGNED"
	ok "wharf inspect --remote (Identity)" wharf inspect --remote -f '{{json .Identity}}' "$SIGNED"
	check "the signed image is accepted, its bundle verified" "accepted sigstoreSigned sigstore-bundle true" \
		"$(wharf inspect --remote -f '{{.Trust.Decision}} {{.Trust.Requirement}}{{range .Trust.Signatures}} {{.Format}} {{.Verified}}{{end}}' "$SIGNED" 2>/dev/null)"
	check "an unsigned image in the scope is rejected (inspect still answers)" rejected \
		"$(wharf inspect --remote -f '{{.Trust.Decision}}' "$UNSIGNED" 2>/dev/null)"

	heading "wharf pull — the unsigned image in the signed scope is refused"
	show wharf pull "$UNSIGNED"
	wharf pull "$UNSIGNED" >"$WORK/refused.out" 2>&1
	refused_status=$?
	cat "$WORK/refused.out"
	if [ "$refused_status" -ne 0 ]; then
		echo "ok: the pull failed (exit status $refused_status)"
	else
		fail "expected to fail: pull of an unsigned image under sigstoreSigned"
	fi
	if grep -q "pull of .*signed/unsigned:1.0 refused by the signature policy: " "$WORK/refused.out"; then
		echo "ok: the policy's message"
	else
		fail "the refusal names the image and the signature policy"
	fi
	check "nothing was stored" "" "$(wharf images -q "$UNSIGNED" 2>/dev/null)"
	ok "wharf events (refused)" wharf events --since 5m --until 0s --filter event=refused

	heading "wharf pull — the signed image, and one outside the signed scopes"
	ok "wharf pull (signed)" wharf pull "$SIGNED"
	check "the local image keeps the verdict it was pulled under" accepted \
		"$(wharf inspect -f '{{.Trust.Decision}}' "$SIGNED" 2>/dev/null)"
	ok "wharf pull (default scope: insecureAcceptAnything)" wharf pull "$IMG"
	export WHARF_HOST="unix://$SOCK"
else
	echo "!! wharfd with --signature-policy did not start; its log:" >&2
	tail -20 "$WORK/wharfd-policy.log" >&2
	fail "wharfd --signature-policy started"
fi

heading "Summary"
if [ "$failures" -eq 0 ]; then
	echo "demo: every step behaved as expected"
	exit 0
fi
echo "demo: $failures step(s) did not behave as expected:" >&2
printf '  - %s\n' "${failed_steps[@]}" >&2
echo "logs: $WORK/wharfd.log, $WORK/wharfd-policy.log, $WORK/registry.log, $WORK/registry2.log (run with KEEP=1 to keep them)" >&2
exit 1
