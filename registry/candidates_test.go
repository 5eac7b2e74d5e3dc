package registry

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/wharfproject/wharf/internal/imageref"
)

// A reload in the middle of a decision: Candidates, RepositoryInfo and the
// rest read the configuration once, so the answer is the old
// configuration's or the new one's, never a mix (issue 19, item 5).
func TestCandidatesReadTheConfigurationOnce(t *testing.T) {
	old := ServiceOptions{AddRegistries: []string{"a.example"}, CertsDirs: []string{t.TempDir()}}
	next := ServiceOptions{AddRegistries: []string{"b.example"}, BlockRegistries: []string{"all"}, CertsDirs: old.CertsDirs}
	s := testService(t, old)
	var once sync.Once
	s.configRead = func() {
		once.Do(func() {
			if _, err := s.Reload(next); err != nil {
				t.Error(err)
			}
		})
	}
	cands, err := candidatesOf(s, "app")
	if err != nil {
		t.Fatalf("Candidates: %v, want the first configuration's answer", err)
	}
	var got []string
	for _, c := range cands {
		got = append(got, c.String())
	}
	if len(got) != 2 || got[0] != "a.example/app" || got[1] != "docker.io/library/app" {
		t.Errorf("candidates %v, want [a.example/app docker.io/library/app] (the configuration before the reload)", got)
	}

	// RepositoryInfo: blocked or not, and secure or not, from one configuration.
	s = testService(t, ServiceOptions{CertsDirs: old.CertsDirs})
	once = sync.Once{}
	s.configRead = func() {
		once.Do(func() {
			if _, err := s.Reload(ServiceOptions{InsecureRegistries: []string{"r.example"}, BlockRegistries: []string{"r.example"}, CertsDirs: old.CertsDirs}); err != nil {
				t.Error(err)
			}
		})
	}
	n, _ := reference.ParseNormalizedNamed("r.example/app")
	info, err := s.RepositoryInfo(n)
	if err != nil || errdefs.IsPermissionDenied(err) {
		t.Fatalf("RepositoryInfo: %v, want the first configuration's answer", err)
	}
	if !info.Index.Secure {
		t.Errorf("r.example read as insecure: the configuration after the reload leaked into the decision")
	}
}

// A whole resolution, candidates to endpoints, is one decision: one read.
func TestResolveReadsTheConfigurationOnce(t *testing.T) {
	f := newFakeRegistry(t)
	f.addImage("team/app", "1.4", "linux", "amd64", "")
	s := testService(t, ServiceOptions{})
	var reads atomic.Int64
	s.configRead = func() { reads.Add(1) }
	if _, err := findImage(t.Context(), s, f.host()+"/team/app:1.4", Credentials{}); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads of the configuration in one resolution, want 1", n)
	}
}

// candidatesOf parses name as the API server does, then asks for its
// candidates.
func candidatesOf(s *Service, name string) ([]reference.Named, error) {
	ref, err := imageref.Parse(name)
	if err != nil {
		return nil, err
	}
	return s.Candidates(ref)
}

// findImage parses name as the API server does, then finds it.
func findImage(ctx context.Context, s *Service, name string, creds Credentials) (*Resolved, error) {
	ref, err := imageref.Parse(name)
	if err != nil {
		return nil, err
	}
	return s.FindImage(ctx, ref, creds)
}
