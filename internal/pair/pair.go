// Package pair runs the two sides of a comparison at once (a diff's From
// and To), each side's own reads in series.
package pair

import (
	"context"
	"errors"
)

// Both runs a and b at once. The first failure cancels the other; when
// both fail, a's error is the answer unless it is only the cancellation
// b's failure caused.
func Both(ctx context.Context, a, b func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var berr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if berr = b(ctx); berr != nil {
			cancel()
		}
	}()
	aerr := a(ctx)
	if aerr != nil {
		cancel()
	}
	<-done
	if aerr != nil && !(errors.Is(aerr, context.Canceled) && berr != nil) {
		return aerr
	}
	return berr
}
