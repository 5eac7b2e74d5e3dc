package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// PythonSDKSuite runs a handful of image operations through the Python
// docker SDK (Debian's python3-docker, installed by .ci/run), a client we do
// not control: testdata/python_sdk_images.py checks each step itself and
// prints a summary. Once with the version the SDK negotiates, once pinned
// to 1.24, as old scripts pin it.
type PythonSDKSuite struct {
	suiteFixture
	d   *Daemon
	reg *testregistry.Registry
}

func TestPythonSDKSuite(t *testing.T) { t.Parallel(); runSuite(t, &PythonSDKSuite{}) }

func (s *PythonSDKSuite) SetUpSuite(c *check.C) {
	pythonsWithDockerSDK(c)
	s.d = s.startDaemon(c)
	s.reg = s.startRegistry(c, testregistry.Options{})
}

// pythonsWithDockerSDK are the python3 interpreters that import the docker
// SDK, each once: $WHARF_PYTHON, python3 on PATH, and Debian's
// /usr/bin/python3 (where apt puts python3-docker when PATH has another
// python3 first). With both, two SDK versions are checked.
func pythonsWithDockerSDK(c *check.C) []string {
	var found, tried []string
	seen := map[string]bool{}
	for _, p := range []string{os.Getenv("WHARF_PYTHON"), "python3", "/usr/bin/python3"} {
		if p == "" {
			continue
		}
		path, err := exec.LookPath(p)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && seen[real] {
			continue
		} else if err == nil {
			seen[real] = true
		}
		tried = append(tried, path)
		if exec.Command(path, "-c", "import docker").Run() == nil {
			found = append(found, path)
		}
	}
	if len(found) == 0 {
		// Fails under CI=true, skips elsewhere, as for the docker CLI.
		requireClient(c, "python3-with-the-docker-SDK", "python3-docker (apt; tried "+strings.Join(tried, ", ")+")")
	}
	return found
}

// run runs the script with every python3 that has the SDK, each on its
// own repository, and checks what it reports.
func (s *PythonSDKSuite) run(c *check.C, api, prefix string) []map[string]any {
	script, err := filepath.Abs(filepath.Join("testdata", "python_sdk_images.py"))
	c.Assert(err, check.IsNil)
	var outs []map[string]any
	for i, py := range pythonsWithDockerSDK(c) {
		repo := fmt.Sprintf("%s%d", prefix, i)
		img := pushImage(c, s.reg, repo+"/app", "1.0", testregistry.ImageOptions{Layers: 2, Labels: map[string]string{"via": "python"}})
		env := append(s.d.cliEnv(),
			"WHARF_TEST_API="+api,
			"WHARF_TEST_IMAGE="+s.reg.Host+"/"+repo+"/app",
			"WHARF_TEST_TAG=1.0",
			"WHARF_TEST_ID="+img.ID(),
			"WHARF_TEST_PREFIX="+repo,
			"PYTHONDONTWRITEBYTECODE=1",
		)
		r := runCmd(c, nil, env, py, script)
		c.Assert(r.ExitCode, check.Equals, 0, check.Commentf("%s\n--- wharfd log (tail) ---\n%s", r, logTail(s.d)))
		var out map[string]any
		c.Assert(json.Unmarshal([]byte(strings.TrimSpace(r.Stdout)), &out), check.IsNil, check.Commentf("%s", r))
		c.Assert(out["layers"], check.DeepEquals, toAny(img.DiffIDs))
		c.Assert(out["not_found"], check.Matches, `No such image: `+s.reg.Host+"/"+repo+`/app:1\.0`)
		c.Logf("%s: python docker SDK %v at API %v (server %v)", py, out["sdk"], out["api"], out["server_api"])
		outs = append(outs, out)
	}
	return outs
}

func (s *PythonSDKSuite) TestPythonSDKImageOperations(c *check.C) {
	for _, out := range s.run(c, "auto", "pyauto") {
		c.Assert(out["api"], check.Equals, out["server_api"], check.Commentf("auto negotiates the daemon's version"))
		c.Assert(out["df"], check.Equals, true)
	}
}

// Scripts pin old versions; 1.24 is the lowest both SDK versions accept.
func (s *PythonSDKSuite) TestPythonSDKImageOperationsPinnedTo124(c *check.C) {
	for _, out := range s.run(c, "1.24", "py124v") {
		c.Assert(out["api"], check.Equals, "1.24")
	}
}
