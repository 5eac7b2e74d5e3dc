// Package ocilayout is the OCI image layout as wharf reads and writes it:
// its names (oci-layout, index.json, blobs/<alg>/<hex>), a tar writer for
// the layout streamed to a client (docker save, the sync export), the
// entries of a layout tar as a reader sees them (through internal/safetar:
// no sparse entry, no more entry bytes than archive bytes read), and
// index.json written an entry at a time (the store's, at any size).
package ocilayout

import (
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The layout's names.
const (
	LayoutFile = ocispec.ImageLayoutFile // "oci-layout"
	IndexFile  = "index.json"
	BlobsDir   = "blobs"
)

// maxLayoutFile bounds the oci-layout file a reader takes: it holds one
// short field ({"imageLayoutVersion":"1.0.0"}, 30 bytes); 4 KiB leaves
// room for whitespace and unknown fields.
const maxLayoutFile = 4096

// LayoutBytes is the oci-layout file wharf writes.
var LayoutBytes = func() []byte {
	b, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		panic(err)
	}
	return b
}()

// BlobPath is the layout path of blob d: blobs/<alg>/<hex>.
func BlobPath(d digest.Digest) string {
	return path.Join(BlobsDir, string(d.Algorithm()), d.Encoded())
}

// ParseBlobPath parses blobs/<alg>/<hex> (a cleaned, relative name) into
// a valid digest; false for any other name.
func ParseBlobPath(name string) (digest.Digest, bool) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 || parts[0] != BlobsDir {
		return "", false
	}
	d := digest.NewDigestFromEncoded(digest.Algorithm(parts[1]), parts[2])
	if d.Validate() != nil {
		return "", false
	}
	return d, true
}

// ReadLayoutFile reads an oci-layout file (at most 4 KiB of it) and
// refuses any version but the one wharf writes (InvalidArgument).
func ReadLayoutFile(r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, maxLayoutFile))
	if err != nil {
		return err
	}
	var l ocispec.ImageLayout
	if json.Unmarshal(b, &l) != nil || l.Version != ocispec.ImageLayoutVersion {
		return fmt.Errorf("oci-layout is not version %s%.0w", ocispec.ImageLayoutVersion, errdefs.ErrInvalidArgument)
	}
	return nil
}

// ReadIndex reads an index.json of size bytes, refused (InvalidArgument)
// when larger than max.
func ReadIndex(r io.Reader, size, max int64) (ocispec.Index, error) {
	var idx ocispec.Index
	if size > max {
		return idx, fmt.Errorf("index.json is %d bytes, more than %d%.0w", size, max, errdefs.ErrInvalidArgument)
	}
	b, err := io.ReadAll(io.LimitReader(r, max))
	if err != nil {
		return idx, err
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return idx, fmt.Errorf("index.json: %v%.0w", err, errdefs.ErrInvalidArgument)
	}
	return idx, nil
}
