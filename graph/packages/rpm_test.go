package packages

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
)

// rpmdbTestdata is a database go-rpmdb ships as test data (in the module
// cache, where the build put it).
func rpmdbTestdata(t *testing.T, rel string) []byte {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/anchore/go-rpmdb").Output()
	if err != nil {
		t.Skipf("go-rpmdb's module directory: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "pkg", "testdata", rel))
	if err != nil {
		t.Skipf("go-rpmdb's test data: %v", err)
	}
	return b
}

func TestReadRPMNdbWithEpochs(t *testing.T) {
	fs := mapFS{
		"/etc/os-release":                   {data: []byte("ID=\"sles\"\nVERSION_ID=\"15.3\"\n")},
		"/usr/lib/sysimage/rpm/Packages.db": {data: rpmdbTestdata(t, "sle15-bci/Packages.db")},
	}
	c, err := Read(context.Background(), fs, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Packages) == 0 {
		t.Fatal("no packages")
	}
	for _, p := range c.Packages {
		if p.Type != "rpm" || !strings.HasPrefix(p.PURL, "pkg:rpm/sles/") || !strings.Contains(p.PURL, "distro=sles-15.3") {
			t.Fatalf("%+v", p)
		}
		if strings.Contains(p.PURL, "epoch=") != strings.Contains(p.Version, ":") {
			t.Fatalf("epoch in one of version and purl: %+v", p)
		}
	}
}

func TestReadRPMCappedOrMalformedIsSkipped(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxRPMDB = 1024
	for name, fs := range map[string]mapFS{
		"over the cap": {"/var/lib/rpm/rpmdb.sqlite": {data: rpmdbTestdata(t, "rockylinux-9/rpmdb.sqlite")}},
		"not a db":     {"/var/lib/rpm/Packages": {data: []byte("not a database at all")}},
	} {
		c, err := Read(context.Background(), fs, lim)
		if err != nil || len(c.Packages) != 0 {
			t.Fatalf("%s: %v %+v", name, err, c)
		}
	}
}

func TestReadHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Read(ctx, ctxFS{}, DefaultLimits())
	if err == nil {
		t.Fatal("read on a cancelled context")
	}
}

// ctxFS fails as a room does on a cancelled context.
type ctxFS struct{ mapFS }

func (ctxFS) Copy(ctx context.Context, p string, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return errdefs.ErrNotFound
}
