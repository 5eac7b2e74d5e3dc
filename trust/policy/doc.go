// Package policy is wharf's signature-verification policy: one file in the
// containers-policy.json(5) format (the one podman, skopeo and cri-o read),
// plus wharf's own notationSigned requirement.
//
//	p, err := policy.Load("/etc/containers/policy.json", opts) // *policy.Error names where
//	scope, reqs := p.For(ref)                                 // the scope that applies
//	if p.NeedsSignatures(ref) { src = list(...) }             // else skip fetching
//	verdict, err := p.Evaluate(ctx, trust.Image{...}, src)    // src: a trust.Source
//	show := p.Show(ref)                                       // `wharf trust show NAME`
//
// The package verifies nothing itself: Options carries constructors for
// trust/sigstore's and trust/notation's verifiers (see Options for the
// wiring), called once per requirement at Load with the requirement's trust
// roots already read. Tests pass fakes.
//
// # The file
//
//	{
//	  "default": [requirement, …],            required, non-empty
//	  "transports": {                          optional
//	    "docker": {                            images from registries
//	      "": [requirement, …],                transports.docker's default
//	      scope: [requirement, …], …           non-empty lists
//	    },
//	    "docker-archive": {"": […]},           docker load (transport.go)
//	    "oci-archive": {"": […]},              sync's archive import
//	    "docker-daemon": {…}, "atomic": {…}, "oci": {…}, …
//	  }
//	}
//
// Parsing is as strict as containers/image's: an unknown key, a duplicated
// key, a value of the wrong type, an unknown requirement or signedIdentity
// type, or trailing data is an error (errors.Is ErrUnknownKey,
// ErrDuplicateKey, ErrSyntax, ErrUnknownType, …) whose Path says where
// (`transports.docker."quay.io"[0].keyPath`). Transports other than docker
// and the archive transports (docker-archive, oci-archive: their ""
// scope, EvaluateTransport) are parsed with the same strictness but never
// applied. Their files are not read and no verifier is built for them;
// Policy.IgnoredTransports lists them.
//
// # Scopes
//
// For looks up, as containers/image's docker transport does, the first of:
// the reference itself (host/repo:tag, or host/repo@digest for a digested
// reference), the repository, each parent namespace, the host[:port], the
// "*." wildcards of the host without its port from the most specific
// (*.b.example.com, then *.example.com, *.com), transports.docker's "", and
// the top-level default. Only that scope's requirements apply. Names are
// normalised first (busybox is docker.io/library/busybox:latest: a bare
// name gets ":latest" as containers does). A reference with both a tag and
// a digest, which containers cannot represent, is looked up by its digest.
// Host names ignore case (RFC 4343): the name's host and every scope key's
// are folded to lower case, and two keys that differ only there are
// ErrDuplicateKey.
//
// containers/image accepts any string as a docker scope, so a typo never
// matches and the image silently falls to a more general scope. wharf
// rejects (ErrScope, naming the scope) what For can never produce: a name
// not in the fully expanded form (busybox/x, docker.io/busybox:1), a first
// component that is not a registry host (it has a '.' or a ':', or is
// localhost), index.docker.io, a scope with both a tag and a digest, and a
// '*' anywhere but a leading "*." before a port-less host.
// docker.io/<one component> is accepted as a namespace (docker.io/library,
// docker.io/bitnami).
//
// # Requirements
//
//	{"type": "insecureAcceptAnything"}
//	{"type": "reject"}
//	{"type": "signedBy", "keyType": "GPGKeys",
//	 "keyPath" | "keyPaths" | "keyData": …, "signedIdentity": {…}}
//	{"type": "sigstoreSigned",
//	 exactly one of "keyPath", "keyPaths", "keyData", "keyDatas",
//	   "fulcio": {"caPath" | "caData", "oidcIssuer", "subjectEmail"},
//	   "pki": {"caRootsPath" | "caRootsData",
//	           optional "caIntermediatesPath" | "caIntermediatesData",
//	           "subjectEmail" and/or "subjectHostname"},
//	 at most one of "rekorPublicKeyPath", "rekorPublicKeyPaths",
//	   "rekorPublicKeyData", "rekorPublicKeyDatas"
//	   (required with fulcio, refused with pki),
//	 "signedIdentity": {…}}
//	{"type": "notationSigned", …}            wharf's, below
//
// These are containers/image's rules (signature/policy_config.go,
// policy_config_sigstore.go). *Data values are standard base64. Beyond
// them: an empty list or empty data is an error, and signedBy's keyType
// must be GPGKeys (containers accepts three more values it cannot
// evaluate).
//
// Files (keyPath, caPath, …) are read at Load, so a missing or unreadable
// file is a load error naming it. They must be absolute paths
// (ErrRelativePath): containers/image does not require that — it hands the
// path to os.ReadFile, so a relative path means the working directory of
// whatever process evaluates the policy, which for a daemon is arbitrary.
// They must be regular files (a FIFO or /dev/stdin would block Load).
//
// Caps: the policy file is at most 4 MiB (MaxPolicySize; a real policy is
// a few KiB, and the cap bounds what a wrong path makes the daemon read);
// each referenced file at most 1 MiB (MaxKeyFileSize; a PEM bundle of
// hundreds of CA certificates fits, and every byte stays in memory while
// the policy is loaded).
//
// Revision is "sha256:<hex>" over the policy bytes and every referenced
// file's path and bytes, length-prefixed, in a fixed order: rotating a key
// file changes the revision, so cached verdicts die with it.
//
// # signedBy
//
// GPG "simple signing" signatures for registry images live in lookaside
// storage (a sigstore/ web server configured in registries.d), which wharf
// does not read. A signedBy requirement therefore loads and is validated
// (keyType, exactly one key source, the key files read), but is never
// satisfied: it rejects with "signedBy (GPG simple signing) needs lookaside
// signature storage, which wharf does not read; use sigstoreSigned".
// Failing closed keeps a podman policy that demands GPG signatures from
// being weakened by wharf; NeedsSignatures is false for its scope.
//
// # signedIdentity and what binds a signature to the name
//
// signedIdentity takes containers' six forms: matchRepoDigestOrExact (the
// default), matchExact, matchRepository, exactReference {dockerReference},
// exactRepository {dockerRepository} and remapIdentity {prefix,
// signedPrefix}; each takes exactly its keys. Identity.Matches is
// containers' signature/policy_reference_match.go: for
// matchRepoDigestOrExact a tagged image needs a signature naming exactly
// that tag, a digested image one naming the same repository.
//
// Only a legacy cosign simple-signing signature names a reference
// (Finding.DockerReference); signedIdentity judges it, after the verifier
// has verified it. cosign writes the repository without a tag there, so as
// in containers only matchRepository and exactRepository accept cosign's
// legacy signatures. A verified signature whose reference signedIdentity
// refuses is reported with Verified false and an Error saying so.
//
// A Sigstore bundle and a Notation signature name no reference: they sign
// the manifest digest only. Such a verified signature satisfies every
// signedIdentity form by the digest alone — that is what cosign and
// notation themselves mean by a signature. The substitution this allows:
// any image the trusted key (or certificate identity) signed, in any
// repository and under any tag, can be served under a name in the scope —
// the registry or a mirror can answer app:prod with app:debug, with another
// application signed by the same key, or with an older signed build (a
// rollback). exactReference, exactRepository and remapIdentity, which exist
// to pin the name, do not restrict bundles. Use one key or identity per
// repository and narrow scopes where that matters.
//
// # notationSigned
//
// Modelled on a statement of notation's trust policy (trustpolicy.json):
//
//	{"type": "notationSigned",
//	 "trustStore": {"caPaths": ["/abs/ca.pem", …], "caData": ["<base64 PEM>", …]},
//	 "trustedIdentities": ["x509.subject: CN=…, O=…", …] | ["*"],
//	 "signatureVerification": {"level": "strict" | "permissive" | "audit" | "skip"}}
//
// The statement's registryScopes are the policy scope it sits in; its named
// trust stores (ca:name) are given inline as CA certificate files or data
// (at least one). trustedIdentities is non-empty, each "*" (alone) or
// "x509.subject: <DN>". With level skip, trustStore and trustedIdentities
// must be absent (as in notation). Not supported: signatureVerification's
// "override", signingAuthority and TSA trust stores.
//
// Levels, as notation applies them: strict and permissive need a signature
// the verifier verifies (the verifier relaxes expiry and revocation for
// permissive); audit verifies and records every finding but is satisfied
// whatever they say; skip verifies nothing and is satisfied (and
// NeedsSignatures is false for it).
//
// # Evaluation
//
// All requirements of the scope must be satisfied; the first that is not
// decides a rejection (Verdict.Requirement, Verdict.Reason).
// insecureAcceptAnything is satisfied, reject is not. sigstoreSigned is
// satisfied when at least one artifact of format sigstore-bundle or
// cosign-simplesigning verifies under its verifier and its signedIdentity
// accepts it; notationSigned likewise for notation artifacts. Two
// signature requirements need a signature each. The artifacts come from a
// trust.Source, one at a time: each requirement walks it until one
// verifies (audit to the end), and a walk stopped at the source's caps
// (trust.ErrSignatureLimit) judges what it read, saying so in the reason.
//
// An artifact whose Subject is not the image's digest never reaches a
// verifier: it is recorded as a finding with the Error "referrer's subject
// is sha256:…, not the image". A finding with an Error never counts as
// verified, whatever Verified says. Findings are one per artifact (a
// verified finding replaces an unverified one from another requirement);
// artifacts of a format no requirement of the scope judges are not
// verified and not reported. An image without a reference is rejected
// before any scope is chosen; an image whose digest is not valid has every
// artifact set aside; a context cancelled before a verification leaves that
// requirement unsatisfied.
package policy
