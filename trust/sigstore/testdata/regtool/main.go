// Command regtool is the few registry calls gen.sh needs, over plain HTTP
// (the registry it starts listens on 127.0.0.1), stdlib only so that the
// fixtures need no crane:
//
//	regtool freeport               print a free port on 127.0.0.1
//	regtool push HOST/REPO:TAG     push a one-layer image, print its digest
//	regtool bundle HOST/REPO@DIGEST OUTDIR   read back cosign's signatures
//	regtool sig HOST/REPO@DIGEST OUTDIR      (the fixture: artifact.json, payload)
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

const accept = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "freeport" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		check(err)
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		return
	}
	if len(os.Args) < 3 {
		fail(fmt.Errorf("usage: regtool freeport | push REF | bundle|sig REF OUTDIR"))
	}
	host, rest, ok := strings.Cut(os.Args[2], "/")
	if !ok {
		fail(fmt.Errorf("%s: no host", os.Args[2]))
	}
	base := "http://" + host + "/v2/"
	switch {
	case os.Args[1] == "push":
		repo, tag, _ := strings.Cut(rest, ":")
		d, err := push(base+repo, tag)
		check(err)
		fmt.Println(d)
	case (os.Args[1] == "bundle" || os.Args[1] == "sig") && len(os.Args) == 4:
		repo, subject, _ := strings.Cut(rest, "@")
		check(readBack(base+repo, os.Args[1] == "bundle", subject, os.Args[3]))
	default:
		fail(fmt.Errorf("unknown command %q", os.Args[1:]))
	}
}

type manifest struct {
	Manifests []struct {
		Digest       string `json:"digest"`
		ArtifactType string `json:"artifactType"`
	} `json:"manifests"`
	Layers []struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"layers"`
}

// readBack finds cosign's signature for subject in the tag schema (the
// sha256-<hex> referrers index for a bundle, sha256-<hex>.sig for legacy)
// and writes the fixture: artifact.json and payload (the first layer).
func readBack(repo string, bundle bool, subject, out string) error {
	tag := strings.Replace(subject, ":", "-", 1)
	format := "sigstore-bundle"
	ref := tag
	if bundle {
		body, _, err := get(repo + "/manifests/" + tag)
		if err != nil {
			return err
		}
		var idx manifest
		if err := json.Unmarshal(body, &idx); err != nil {
			return err
		}
		ref = ""
		for _, m := range idx.Manifests {
			if strings.HasPrefix(m.ArtifactType, "application/vnd.dev.sigstore.bundle") {
				ref = m.Digest
				break
			}
		}
		if ref == "" {
			return fmt.Errorf("%s:%s lists no Sigstore bundle", repo, tag)
		}
	} else {
		format, ref = "cosign-simplesigning", tag+".sig"
	}
	body, dgst, err := get(repo + "/manifests/" + ref)
	if err != nil {
		return err
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%s has no layer", ref)
	}
	l := m.Layers[0]
	payload, _, err := get(repo + "/blobs/" + l.Digest)
	if err != nil {
		return err
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	art, _ := json.MarshalIndent(map[string]any{
		"format": format, "digest": dgst, "subject": subject, "mediaType": l.MediaType, "annotations": l.Annotations,
	}, "", "  ")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "payload"), payload, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %s %s over %s\n", filepath.Base(out), format, dgst, subject)
	return os.WriteFile(filepath.Join(out, "artifact.json"), append(art, '\n'), 0o644)
}

func digestOf(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }

func push(repo, tag string) (string, error) {
	layer := []byte("wharf trust fixture\n")
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["` + digestOf(layer) + `"]}}`)
	for _, b := range [][]byte{layer, config} {
		if err := putBlob(repo, b); err != nil {
			return "", err
		}
	}
	m, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digestOf(config), "size": len(config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": digestOf(layer), "size": len(layer)}},
	})
	req, _ := http.NewRequest(http.MethodPut, repo+"/manifests/"+tag, bytes.NewReader(m))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	if _, err := do(req, http.StatusCreated); err != nil {
		return "", err
	}
	return digestOf(m), nil
}

func putBlob(repo string, b []byte) error {
	req, _ := http.NewRequest(http.MethodPost, repo+"/blobs/uploads/", nil)
	resp, err := do(req, http.StatusAccepted)
	if err != nil {
		return err
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return err
	}
	loc = req.URL.ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", digestOf(b))
	loc.RawQuery = q.Encode()
	req, _ = http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/octet-stream")
	_, err = do(req, http.StatusCreated)
	return err
}

func get(u string) ([]byte, string, error) {
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", accept)
	resp, err := do(req, http.StatusOK)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	return body, digestOf(body), err
}

func do(req *http.Request, want int) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s: %s", req.Method, req.URL, resp.Status, b)
	}
	if req.Method != http.MethodGet {
		resp.Body.Close()
	}
	return resp, nil
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "regtool:", err)
	os.Exit(1)
}
