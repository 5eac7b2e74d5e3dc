package pair

import (
	"context"
	"errors"
	"testing"
)

func TestBoth(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	// waitCancel fails only when the other side's failure cancels it.
	waitCancel := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	fail := func(err error) func(context.Context) error { return func(context.Context) error { return err } }
	ok := fail(nil)
	for _, tc := range []struct {
		name string
		a, b func(context.Context) error
		want error
	}{
		{"both succeed", ok, ok, nil},
		{"a fails", fail(errA), ok, errA},
		{"b fails", ok, fail(errB), errB},
		{"both fail: a wins", fail(errA), fail(errB), errA},
		{"b fails, a cancelled", waitCancel, fail(errB), errB},
		{"a fails, b cancelled", fail(errA), waitCancel, errA},
	} {
		if got := Both(context.Background(), tc.a, tc.b); !errors.Is(got, tc.want) || (tc.want == nil) != (got == nil) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
