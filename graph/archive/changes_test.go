package archive

import (
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
)

func TestApplyChanges(t *testing.T) {
	tests := []struct {
		changes []string
		check   func(c *dockerspec.DockerOCIImageConfig) string
	}{
		{[]string{`CMD ["/bin/sh"]`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Cmd) }},
		{[]string{`CMD echo hi`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Cmd) }},
		{[]string{`cmd ["a", "b c"]`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(len(c.Cmd), " ", c.Cmd[1]) }},
		{[]string{`CMD ["x"]`, `ENTRYPOINT ["/e"]`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Entrypoint, c.Cmd) }},
		{[]string{`ENTRYPOINT /e`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Entrypoint) }},
		{[]string{`SHELL ["/bin/bash","-c"]`, `CMD run`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Cmd) }},
		{[]string{`ENV A=1 B="two words" C=a\ b`}, func(c *dockerspec.DockerOCIImageConfig) string { return strings.Join(c.Env, "|") }},
		{[]string{`ENV A 1 2 3`, `ENV A=4`}, func(c *dockerspec.DockerOCIImageConfig) string { return strings.Join(c.Env, "|") }},
		{[]string{`LABEL a=b "c d"='e f'`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Labels) }},
		{[]string{`EXPOSE 80 53/udp 8000-8001/TCP`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.ExposedPorts) }},
		{[]string{`USER nobody`}, func(c *dockerspec.DockerOCIImageConfig) string { return c.User }},
		{[]string{`WORKDIR /a`, `WORKDIR b`}, func(c *dockerspec.DockerOCIImageConfig) string { return c.WorkingDir }},
		{[]string{`VOLUME ["/data", "/logs"]`, `VOLUME /x /y`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.Volumes) }},
		{[]string{`STOPSIGNAL SIGKILL`}, func(c *dockerspec.DockerOCIImageConfig) string { return c.StopSignal }},
		{[]string{"ENV X=1\nUSER u\n# comment\n"}, func(c *dockerspec.DockerOCIImageConfig) string { return c.User + fmt.Sprint(c.Env) }},
		{[]string{`ONBUILD RUN x`}, func(c *dockerspec.DockerOCIImageConfig) string { return fmt.Sprint(c.OnBuild) }},
	}
	want := []string{
		"[/bin/sh]",
		"[/bin/sh -c echo hi]",
		"2 b c",
		"[/e] [x]",
		"[/bin/sh -c /e]",
		"[/bin/bash -c run]",
		"A=1|B=two words|C=a b",
		"A=4",
		"map[a:b c d:e f]",
		"map[53/udp:{} 80/tcp:{} 8000/tcp:{} 8001/tcp:{}]",
		"nobody",
		"/a/b",
		"map[/data:{} /logs:{} /x:{} /y:{}]",
		"SIGKILL",
		"u[X=1]",
		"[RUN x]",
	}
	for i, tt := range tests {
		var c dockerspec.DockerOCIImageConfig
		if err := applyChanges(&c, tt.changes); err != nil {
			t.Errorf("%q: %v", tt.changes, err)
			continue
		}
		if got := tt.check(&c); got != want[i] {
			t.Errorf("%q: got %q, want %q", tt.changes, got, want[i])
		}
	}
}

func TestApplyChangesErrors(t *testing.T) {
	tests := []struct{ change, msg string }{
		{"RUN make", "run is not a valid change command"},
		{"FROM scratch", "from is not a valid change command"},
		{"EXPOSE 99999", "invalid containerPort"},
		{"EXPOSE 80/icmp", "invalid proto"},
		{"ENV", "ENV requires at least one argument"},
		{`ENV A="unterminated`, "ENV: unmatched quote"},
		{"LABEL =x", "LABEL names can not be blank"},
		{"USER", "USER requires exactly one argument"},
		{"SHELL /bin/sh", "SHELL requires the arguments to be in JSON form"},
		{"STOPSIGNAL a b", "STOPSIGNAL requires exactly one argument"},
		{"VOLUME", "VOLUME requires at least one argument"},
	}
	for _, tt := range tests {
		var c dockerspec.DockerOCIImageConfig
		err := applyChanges(&c, []string{tt.change})
		if !errdefs.IsInvalidArgument(err) || !strings.HasPrefix(err.Error(), tt.msg) {
			t.Errorf("%q: err = %v, want %q", tt.change, err, tt.msg)
		}
	}
	var c dockerspec.DockerOCIImageConfig
	if err := applyChanges(&c, []string{"LABEL x=" + strings.Repeat("a", maxChangesLen)}); !errdefs.IsInvalidArgument(err) {
		t.Errorf("oversized changes: %v", err)
	}
}

func FuzzApplyChanges(f *testing.F) {
	for _, s := range []string{`CMD ["/bin/sh"]`, `ENV A=1 B="x y"`, `LABEL a='b'`, `EXPOSE 1-65535/udp`, `WORKDIR rel`, `VOLUME ["/v"]`, "ENV\nUSER", `ENV A="\`, `LABEL "a\"b"=c`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var c dockerspec.DockerOCIImageConfig
		_ = applyChanges(&c, []string{s})
	})
}
