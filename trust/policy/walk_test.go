package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/wharfproject/wharf/trust"
)

// countingSource hands out arts one at a time, counting what was read,
// and ends with err once they run out.
type countingSource struct {
	arts []trust.Artifact
	err  error
	read int
}

func (s *countingSource) Each(ctx context.Context, fn func(trust.Artifact) bool) error {
	for _, a := range s.arts {
		s.read++
		if !fn(a) {
			return nil
		}
	}
	return s.err
}

// many is n signatures by X (none verifies) with a signature by root at
// position at (-1: none).
func many(n, at int, root string) []trust.Artifact {
	var out []trust.Artifact
	for i := 0; i < n; i++ {
		r := "X"
		if i == at {
			r = root
		}
		a := art(1, trust.FormatSigstoreBundle, r, "")
		a.Digest = digest.FromString(fmt.Sprint(i))
		out = append(out, a)
	}
	return out
}

// A requirement stops reading at the first signature that verifies; a
// cap the source reports is a rejection that says so; any other error of
// the source is the look-up's; audit reads everything.
func TestEvaluateWalksLazily(t *testing.T) {
	img := func(ref string) trust.Image { return trust.Image{Reference: named(t, ref), Digest: img0} }
	var calls []digest.Digest
	p := mustParse(t, evalPolicy, fakeOptions(&calls))

	src := &countingSource{arts: many(500, 0, "A")}
	v, err := p.Evaluate(context.Background(), img("alpine:3"), src)
	if err != nil || v.Decision != trust.Accepted || src.read != 1 || len(calls) != 1 || len(v.Findings) != 1 {
		t.Errorf("valid first: %v %s, %d read, %d verified, %d findings", err, v.Decision, src.read, len(calls), len(v.Findings))
	}

	calls = nil
	limit := fmt.Errorf("more than 32%.0w", trust.ErrSignatureLimit)
	src = &countingSource{arts: many(32, -1, ""), err: limit}
	v, err = p.Evaluate(context.Background(), img("alpine:3"), src)
	if err != nil || v.Decision != trust.Rejected || !strings.Contains(v.Reason, "no signature verified (32 found") ||
		!strings.Contains(v.Reason, "the look-up stopped there: more than 32") || !strings.Contains(v.Reason, "and 29 more") {
		t.Errorf("at the cap: %v %s %q", err, v.Decision, v.Reason)
	}

	broken := errors.New("connection reset")
	src = &countingSource{arts: many(3, -1, ""), err: broken}
	if _, err = p.Evaluate(context.Background(), img("alpine:3"), src); !errors.Is(err, broken) {
		t.Errorf("registry error: %v", err)
	}

	// audit: every signature is read and reported, still as the source
	// allows.
	calls = nil
	arts := many(10, 2, "N")
	for i := range arts {
		arts[i].Format = trust.FormatNotation
	}
	src = &countingSource{arts: arts, err: limit}
	v, err = p.Evaluate(context.Background(), img("audit.example/x"), src)
	if err != nil || v.Decision != trust.Accepted || src.read != 10 || len(v.Findings) != 10 || !strings.Contains(v.Reason, "1 of 10 verified; the look-up stopped there") {
		t.Errorf("audit: %v %s %q, %d read", err, v.Decision, v.Reason, src.read)
	}
}
