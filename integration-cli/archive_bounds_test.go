package integration

import (
	"archive/tar"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// ArchiveBoundsSuite: what wharfd writes for an archive a client sends
// (docker load, sync's archive import) is bounded by the bytes it sent.
type ArchiveBoundsSuite struct {
	suiteFixture
	dst *testregistry.Registry
	d   *Daemon
}

func TestArchiveBoundsSuite(t *testing.T) { t.Parallel(); runSuite(t, &ArchiveBoundsSuite{}) }

func (s *ArchiveBoundsSuite) SetUpSuite(c *check.C) {
	s.dst = s.startRegistry(c, testregistry.Options{})
	s.d = s.startDaemon(c)
}

// sparseDeclared is the size the sparse entry declares: 512 MiB, from an
// archive of a few KiB.
const sparseDeclared = 512 << 20

// sparseLayoutArchive is an OCI layout tar whose one blob entry is a PAX
// (GNU 0.1) sparse file declaring sparseDeclared bytes: archive/tar reads
// it back as 512 MiB of zeros and a byte.
func sparseLayoutArchive(c *check.C) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	layout := `{"imageLayoutVersion":"1.0.0"}`
	c.Assert(tw.WriteHeader(&tar.Header{Name: "oci-layout", Size: int64(len(layout)), Mode: 0o644, Typeflag: tar.TypeReg}), check.IsNil)
	_, err := tw.Write([]byte(layout))
	c.Assert(err, check.IsNil)
	c.Assert(tw.Flush(), check.IsNil)
	buf.Write(testregistry.SparseTarEntry("blobs/sha256/"+digest.FromString("sparse").Encoded(), sparseDeclared, []byte("x")))
	idx := `{"schemaVersion":2,"manifests":[]}`
	c.Assert(tw.WriteHeader(&tar.Header{Name: "index.json", Size: int64(len(idx)), Mode: 0o644, Typeflag: tar.TypeReg}), check.IsNil)
	_, err = tw.Write([]byte(idx))
	c.Assert(err, check.IsNil)
	c.Assert(tw.Close(), check.IsNil)
	c.Assert(buf.Len() < 16<<10, check.Equals, true, check.Commentf("the archive is %d bytes", buf.Len()))
	return buf.Bytes()
}

// written is what wharfd has passed to write(2) so far (/proc/PID/io
// wchar): files it wrote and removed count too.
func (d *Daemon) written(c *check.C) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/io")
	c.Assert(err, check.IsNil)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			c.Assert(err, check.IsNil)
			return n
		}
	}
	c.Fatalf("no wchar in /proc/PID/io: %s", b)
	return 0
}

// maxWrittenForSparse bounds what wharfd may write while refusing the
// archive: its log lines and the answer, far below the 512 MiB declared.
const maxWrittenForSparse = 4 << 20

func (s *ArchiveBoundsSuite) assertNothingWritten(c *check.C, before int64, what string) {
	w := s.d.written(c) - before
	c.Logf("%s: wharfd wrote %d bytes", what, w)
	c.Assert(w < maxWrittenForSparse, check.Equals, true, check.Commentf("%s: wharfd wrote %d bytes for a %d-byte sparse entry", what, w, int64(sparseDeclared)))
	left, err := os.ReadDir(filepath.Join(s.d.Root, "ingest"))
	c.Assert(err, check.IsNil)
	c.Assert(left, check.HasLen, 0, check.Commentf("%s: ingest/ holds %v", what, left))
}

func (s *ArchiveBoundsSuite) post(c *check.C, path string, body []byte) (int, string) {
	resp, err := s.d.HTTPClient().Post("http://wharfd"+path, "application/x-tar", bytes.NewReader(body))
	c.Assert(err, check.IsNil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// docker load of a few KiB declaring a 512 MiB sparse blob is refused at
// the entry's header (an invalid-argument error, in the stream as dockerd
// answers a load), and wharfd writes almost nothing: before the
// rule it wrote all 512 MiB of zeros into ingest/ before the blob's hash
// failed.
func (s *ArchiveBoundsSuite) TestDockerLoadRefusesSparseEntry(c *check.C) {
	archive := sparseLayoutArchive(c)
	file := filepath.Join(c.MkDir(), "sparse.tar")
	c.Assert(os.WriteFile(file, archive, 0o600), check.IsNil)

	before := s.d.written(c)
	r := s.d.Docker(c, "load", "-i", file)
	s.assertNothingWritten(c, before, "docker load")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*sparse.*`, check.Commentf("%s", r))

	before = s.d.written(c)
	// dockerd answers a load's errors in its stream (200 first), and so
	// does wharfd: the refusal is the stream's errorDetail.
	code, body := s.post(c, "/images/load?quiet=1", archive)
	c.Assert(code, check.Equals, http.StatusOK, check.Commentf("%s", body))
	c.Assert(body, check.Matches, `(?s).*"errorDetail":\{"message":"invalid archive: sparse tar entries are not accepted.*`)
	s.assertNothingWritten(c, before, "POST /images/load")
	r = s.d.WharfOK(c, "images", "-q")
	c.Assert(strings.TrimSpace(r.Stdout), check.Equals, "")
}

// The same archive through sync's archive import (wharf sync
// oci-archive:FILE DST, and POST /wharf/images/sync/import): refused
// (400) before anything is pushed, almost nothing written.
func (s *ArchiveBoundsSuite) TestSyncImportRefusesSparseEntry(c *check.C) {
	archive := sparseLayoutArchive(c)
	file := filepath.Join(c.MkDir(), "sparse.tar")
	c.Assert(os.WriteFile(file, archive, 0o600), check.IsNil)

	before := s.d.written(c)
	r := s.d.Wharf(c, "sync", "oci-archive:"+file, s.dst.Host+"/sparse")
	s.assertNothingWritten(c, before, "wharf sync oci-archive:")
	c.Assert(r.ExitCode, check.Not(check.Equals), 0, check.Commentf("%s", r))
	c.Assert(r.Stderr, check.Matches, `(?s).*sparse.*`, check.Commentf("%s", r))

	before = s.d.written(c)
	opts := url.QueryEscape(`{"destination":"` + s.dst.Host + `/sparse"}`)
	code, body := s.post(c, "/wharf/images/sync/import?options="+opts, archive)
	c.Assert(code, check.Equals, http.StatusBadRequest, check.Commentf("%s", body))
	c.Assert(body, check.Matches, `(?s).*sparse.*`)
	s.assertNothingWritten(c, before, "POST /wharf/images/sync/import")
}
