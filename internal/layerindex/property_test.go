package layerindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// randomStack is an image of 1–4 layers of random entries over a small
// name space, so that paths collide: directories, files, symlinks
// (absolute, relative, climbing, dangling), whiteouts, opaque markers and
// hardlinks to files of the same layer.
func randomStack(r *rand.Rand) [][]tf {
	comps := []string{"a", "b", "c"}
	randPath := func() string {
		n := 1 + r.IntN(3)
		var parts []string
		for i := 0; i < n; i++ {
			parts = append(parts, comps[r.IntN(len(comps))])
		}
		return strings.Join(parts, "/")
	}
	targets := []string{"/a", "a", "../b", "../../../c", "/a/b", "b/c", "/nope", "."}
	var layers [][]tf
	for l := 1 + r.IntN(4); l > 0; l-- {
		var ents []tf
		var files []string
		for k := 1 + r.IntN(8); k > 0; k-- {
			p := randPath()
			switch r.IntN(7) {
			case 0, 1:
				ents = append(ents, dir(p+"/"))
			case 2:
				ents = append(ents, file(p, fmt.Sprint(r.IntN(100))))
				files = append(files, p)
			case 3:
				ents = append(ents, symlink(p, targets[r.IntN(len(targets))]))
			case 4:
				ents = append(ents, whiteout(path.Join(path.Dir(p), ".wh."+path.Base(p))))
			case 5:
				ents = append(ents, whiteout(p+"/.wh..wh..opq"))
			case 6:
				if len(files) > 0 {
					ents = append(ents, hardlink(p, files[r.IntN(len(files))]))
				}
			}
		}
		layers = append(layers, ents)
	}
	return layers
}

// TestMergeMatchesUmociOnRandomStacks: for random images the merged
// listing equals umoci's unpacked directory, and where Merge refuses an
// image umoci fails to unpack it too.
func TestMergeMatchesUmociOnRandomStacks(t *testing.T) {
	umoci := needUmoci(t)
	n := 60
	if testing.Short() {
		n = 10
	}
	if s, err := strconv.Atoi(os.Getenv("LAYERINDEX_SEEDS")); err == nil {
		n = s // a longer run by hand
	}
	agreedRefusals := 0
	for seed := uint64(0); seed < uint64(n); seed++ {
		stack := randomStack(rand.New(rand.NewPCG(seed, 33)))
		var ls []layer
		var ixs []*Index
		for _, ents := range stack {
			l := buildLayer(t, tarOf(t, ents...))
			ls, ixs = append(ls, l), append(ixs, l.ix)
		}
		dir := t.TempDir()
		writeLayout(t, filepath.Join(dir, "image"), ls)
		out, uerr := exec.Command(umoci, "unpack", "--image", filepath.Join(dir, "image")+":t", filepath.Join(dir, "bundle")).CombinedOutput()
		v, merr := Merge(context.Background(), ixs, Limits{})
		if merr != nil || uerr != nil {
			if merr == nil || uerr == nil {
				t.Errorf("seed %d: Merge: %v; umoci: %v %s\nlayers %+v", seed, merr, uerr, out, stack)
			} else {
				agreedRefusals++
			}
			continue
		}
		got := oracleListing(t, filepath.Join(dir, "bundle", "rootfs"))
		var mine []string
		v.List(context.Background(), "/", true, func(it Item) error {
			mine = append(mine, itemLine(t, ls, it))
			return nil
		})
		if !slices.Equal(mine, got) {
			t.Errorf("seed %d: view and umoci differ\n view  %q\n umoci %q\nlayers %+v", seed, mine, got, stack)
		}
	}
	t.Logf("%d random images, %d refused by both", n, agreedRefusals)
}
