package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// The previous store format's real binaries: wharfd and wharf built from
// the last commit before the records moved to bbolt (the parent of the
// first commit that added graph/store/db.go), out of `git archive` of that
// commit, cached under .cache/old-wharf/<commit>/ so that a rerun does not
// build again.

// boltStoreFile is the file whose first commit starts the bbolt store.
const boltStoreFile = "graph/store/db.go"

// errNoHistory is why the old binaries cannot be had: the repository's
// history is missing (a shallow clone, an export without .git).
var errNoHistory = errors.New("no git history")

var oldBins struct {
	once          sync.Once
	rev           string
	wharfd, wharf string
	err           error
}

// oldBinaries returns the previous format's wharfd and wharf, building
// them once. It skips the test when the repository has no history to build
// them from (CI's .ci/run uses a full clone).
func oldBinaries(c *check.C) (rev, wharfd, wharf string) {
	needBinaries(c)
	oldBins.once.Do(func() {
		oldBins.rev, oldBins.wharfd, oldBins.wharf, oldBins.err = buildOldBinaries()
	})
	if errors.Is(oldBins.err, errNoHistory) {
		c.Skip(fmt.Sprintf("the previous store format's binaries cannot be built: %v", oldBins.err))
	}
	c.Assert(oldBins.err, check.IsNil)
	return oldBins.rev, oldBins.wharfd, oldBins.wharf
}

func git(root string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// previousFormatRev is the commit before the one that added boltStoreFile.
func previousFormatRev(root string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", fmt.Errorf("%w: git is not installed", errNoHistory)
	}
	if _, err := git(root, "rev-parse", "--git-dir"); err != nil {
		return "", fmt.Errorf("%w: %s is not a git repository", errNoHistory, root)
	}
	if sh, _ := git(root, "rev-parse", "--is-shallow-repository"); sh == "true" {
		return "", fmt.Errorf("%w: %s is a shallow clone", errNoHistory, root)
	}
	added, err := git(root, "log", "--diff-filter=A", "--format=%H", "--", boltStoreFile)
	if err != nil {
		return "", err
	}
	lines := strings.Fields(added)
	if len(lines) == 0 {
		return "", fmt.Errorf("%w: no commit adds %s", errNoHistory, boltStoreFile)
	}
	first := lines[len(lines)-1] // git log lists the newest first
	rev, err := git(root, "rev-parse", "--verify", first+"^{commit}^")
	if err != nil {
		return "", fmt.Errorf("%w: the parent of %s: %v", errNoHistory, first, err)
	}
	return rev, nil
}

func buildOldBinaries() (rev, wharfd, wharf string, err error) {
	root, err := testregistry.RepoRoot()
	if err != nil {
		return "", "", "", err
	}
	rev, err = previousFormatRev(root)
	if err != nil {
		return "", "", "", err
	}
	dir := filepath.Join(root, ".cache", "old-wharf", rev)
	wharfd, wharf = filepath.Join(dir, "wharfd"), filepath.Join(dir, "wharf")
	if isExecutableFile(wharfd) && isExecutableFile(wharf) {
		return rev, wharfd, wharf, nil
	}
	src, err := os.MkdirTemp("", "wharf-old-src-")
	if err != nil {
		return "", "", "", err
	}
	defer os.RemoveAll(src)
	// git archive | tar -x: the tree of that commit, without the work tree's
	// changes or a checkout that would move HEAD.
	archive := exec.Command("git", "-C", root, "archive", rev)
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", "", "", err
	}
	untar.Stdin = pipe
	var aerr, terr strings.Builder
	archive.Stderr, untar.Stderr = &aerr, &terr
	if err := untar.Start(); err != nil {
		return "", "", "", err
	}
	if err := archive.Run(); err != nil {
		_ = untar.Wait()
		return "", "", "", fmt.Errorf("git archive %s: %w: %s", rev, err, aerr.String())
	}
	if err := untar.Wait(); err != nil {
		return "", "", "", fmt.Errorf("tar -x of %s: %w: %s", rev, err, terr.String())
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", "", err
	}
	// Built into a temp dir of the cache and renamed: an interrupted build
	// leaves no half binary that a rerun would take.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", "", "", err
	}
	defer os.RemoveAll(tmp)
	for _, p := range []struct{ out, pkg string }{{"wharfd", "./cmd/wharfd"}, {"wharf", "./cmd/wharf"}} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, p.out), p.pkg)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", "", fmt.Errorf("go build %s at %s: %w\n%s", p.pkg, rev, err, out)
		}
	}
	for _, n := range []string{"wharfd", "wharf"} {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
			return "", "", "", err
		}
	}
	return rev, wharfd, wharf, nil
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
