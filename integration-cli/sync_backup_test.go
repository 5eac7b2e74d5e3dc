package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"gopkg.in/check.v1"

	"github.com/wharfproject/wharf/internal/testregistry"
)

// backupRefusalDeadline bounds the CLI call of a refused template: a
// refusal at the request's check takes milliseconds; the loop it refuses
// ran for about a minute.
const backupRefusalDeadline = 20 * time.Second

// A backup template that loops ({{range 2000000000}}, which
// text/template iterates since Go 1.22) is refused when the request is
// checked, with an error naming it, before anything moves; the call is
// bounded, so that a regression fails here instead of hanging.
func (s *SyncSuite) TestSyncBackupTemplateLoopRefused(c *check.C) {
	pushImage(c, s.src, "sync/loop", "1", testregistry.ImageOptions{Layers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), backupRefusalDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.Wharf, "-H", s.d.Host, "sync", "--backup", "{{range 2000000000}}{{end}}",
		s.src.Host+"/sync/loop", s.dst.Host+"/loop")
	cmd.Env = append(os.Environ(), s.d.cliEnv()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	c.Assert(ctx.Err(), check.IsNil, check.Commentf("wharf sync did not answer within %s: the template ran", backupRefusalDeadline))
	var ee *exec.ExitError
	c.Assert(errors.As(err, &ee), check.Equals, true, check.Commentf("err = %v; stderr: %s", err, stderr.String()))
	c.Assert(stderr.String(), check.Matches, `(?s).*backup template: \{\{range 2000000000\}\}\{\{end\}\} is not allowed.*`)
	c.Assert(dstDigest(c, s.dst, "loop/loop", "1"), check.Equals, "")
}
