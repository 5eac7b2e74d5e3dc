package ahead

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

type image struct {
	digest string
	files  []string
}

func same(a, b image) bool { return a.digest == b.digest }

// listing reads img behind g as a listing does: every file through a Held.
func listing(out *[]string, mu *sync.Mutex) func(context.Context, image, *Gate) error {
	return func(ctx context.Context, img image, g *Gate) error {
		h := NewHeld(ctx, g, 1<<20, func(string) int { return 1 }, func(s string) error {
			mu.Lock()
			defer mu.Unlock()
			*out = append(*out, s)
			return nil
		})
		for _, f := range img.files {
			if err := h.Put(img.digest + ":" + f); err != nil {
				return err
			}
		}
		return h.Flush()
	}
}

func TestRunWithoutAGuessResolvesThenReads(t *testing.T) {
	m := NewMemo(100, func(image) int { return 1 })
	var out []string
	var mu sync.Mutex
	resolved := 0
	resolve := func(context.Context) (image, error) { resolved++; return image{"a", []string{"1", "2"}}, nil }
	if err := Run(context.Background(), m, KeyOf([]byte("x")), same, resolve, listing(&out, &mu)); err != nil {
		t.Fatal(err)
	}
	if resolved != 1 || strings.Join(out, ",") != "a:1,a:2" {
		t.Fatalf("resolved %d, out %v", resolved, out)
	}
}

// The guessed read runs while resolve waits, and nothing it gives passes
// before resolve has answered.
func TestRunHoldsTheGuessedReadUntilTheRegistryAnswers(t *testing.T) {
	m := NewMemo(100, func(image) int { return 1 })
	k := KeyOf([]byte("x"))
	m.put(k, image{"a", []string{"1", "2"}})
	var out []string
	var mu sync.Mutex
	held := make(chan struct{})
	read := func(ctx context.Context, img image, g *Gate) error {
		h := NewHeld(ctx, g, 1<<20, func(string) int { return 1 }, func(s string) error {
			mu.Lock()
			defer mu.Unlock()
			out = append(out, s)
			return nil
		})
		for _, f := range img.files {
			if err := h.Put(img.digest + ":" + f); err != nil {
				return err
			}
		}
		close(held)
		return h.Flush()
	}
	resolve := func(context.Context) (image, error) {
		<-held // the read on the guess has given all it has
		mu.Lock()
		defer mu.Unlock()
		if len(out) != 0 {
			t.Errorf("output passed before the registry answered: %v", out)
		}
		return image{"a", []string{"1", "2"}}, nil
	}
	if err := Run(context.Background(), m, k, same, resolve, read); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out, ",") != "a:1,a:2" {
		t.Fatalf("out %v", out)
	}
}

// A tag that moved: the guessed read is cancelled, none of it passes, and
// the fresh image is read.
func TestRunDropsAWrongGuess(t *testing.T) {
	m := NewMemo(100, func(image) int { return 1 })
	k := KeyOf([]byte("x"))
	m.put(k, image{"old", []string{"1", "2", "3"}})
	var out []string
	var mu sync.Mutex
	started := make(chan struct{})
	var guessErr error
	read := func(ctx context.Context, img image, g *Gate) error {
		if img.digest == "old" {
			// Holds one entry, then waits for room it never gets.
			h := NewHeld(ctx, g, 1, func(string) int { return 1 }, func(s string) error { out = append(out, s); return nil })
			close(started)
			for _, f := range img.files {
				if guessErr = h.Put(f); guessErr != nil {
					return guessErr
				}
			}
			return h.Flush()
		}
		return listing(&out, &mu)(ctx, img, g)
	}
	resolve := func(context.Context) (image, error) {
		<-started
		return image{"new", []string{"9"}}, nil
	}
	if err := Run(context.Background(), m, k, same, resolve, read); err != nil {
		t.Fatal(err)
	}
	if strings.Join(out, ",") != "new:9" {
		t.Fatalf("out %v", out)
	}
	if !errors.Is(guessErr, ErrStale) {
		t.Fatalf("the guessed read ended with %v, want ErrStale", guessErr)
	}
	if g, _ := m.get(k); g.digest != "new" {
		t.Fatalf("memo holds %q after the fresh answer", g.digest)
	}
}

// A failed resolution (credentials refused, the tag gone) releases
// nothing of the guess and keeps the guess as it was.
func TestRunResolveErrorReleasesNothing(t *testing.T) {
	m := NewMemo(100, func(image) int { return 1 })
	k := KeyOf([]byte("x"))
	m.put(k, image{"a", []string{"1"}})
	var out []string
	var mu sync.Mutex
	denied := errors.New("denied")
	resolve := func(context.Context) (image, error) { return image{}, denied }
	if err := Run(context.Background(), m, k, same, resolve, listing(&out, &mu)); !errors.Is(err, denied) {
		t.Fatalf("err %v", err)
	}
	if len(out) != 0 {
		t.Fatalf("out %v", out)
	}
}

// A guessed read that fails before any output passed runs again on the
// fresh image: its failure may be the guess's own.
func TestRunRetriesAGuessedReadThatFailedUnseen(t *testing.T) {
	m := NewMemo(100, func(image) int { return 1 })
	k := KeyOf([]byte("x"))
	m.put(k, image{"a", nil})
	calls := 0
	read := func(ctx context.Context, img image, g *Gate) error {
		calls++
		if calls == 1 {
			return io.ErrUnexpectedEOF
		}
		return g.Wait(ctx)
	}
	resolve := func(context.Context) (image, error) { return image{"a", nil}, nil }
	if err := Run(context.Background(), m, k, same, resolve, read); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("read %d times", calls)
	}
}

func TestHeldWaitsWhenFull(t *testing.T) {
	g := newGate()
	var out []int
	h := NewHeld(context.Background(), g, 2, func(int) int { return 1 }, func(v int) error { out = append(out, v); return nil })
	for i := 0; i < 2; i++ {
		if err := h.Put(i); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	go func() { done <- h.Put(2) }()
	select {
	case err := <-done:
		t.Fatalf("Put past the bound returned %v before the gate opened", err)
	default:
	}
	g.settle(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(out) != "[0 1 2]" {
		t.Fatalf("out %v", out)
	}
}

func TestWriterOpensItsDestinationOnceOpen(t *testing.T) {
	g := newGate()
	var dest bytes.Buffer
	opened := 0
	w := NewWriter(context.Background(), g, 4, func() (io.Writer, error) { opened++; return &dest, nil })
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if opened != 0 {
		t.Fatal("the destination opened before the gate")
	}
	g.settle(true)
	if _, err := w.Write([]byte("defgh")); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if dest.String() != "abcdefgh" || opened != 1 {
		t.Fatalf("dest %q, opened %d", dest.String(), opened)
	}

	stale := newGate()
	w = NewWriter(context.Background(), stale, 4, func() (io.Writer, error) { t.Fatal("opened on a stale guess"); return nil, nil })
	_, _ = w.Write([]byte("ab"))
	stale.settle(false)
	if err := w.Flush(); !errors.Is(err, ErrStale) {
		t.Fatalf("Flush on a stale gate: %v", err)
	}
}

func TestMemoBudget(t *testing.T) {
	m := NewMemo(10, func(v int) int { return v })
	m.put(KeyOf([]byte("a")), 4)
	m.put(KeyOf([]byte("b")), 4)
	m.put(KeyOf([]byte("a")), 4) // put again: now the most recent
	m.put(KeyOf([]byte("c")), 4) // evicts b, the least recently put
	if _, ok := m.get(KeyOf([]byte("b"))); ok {
		t.Fatal("b kept over the budget")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := m.get(KeyOf([]byte(k))); !ok {
			t.Fatalf("%s forgotten", k)
		}
	}
	m.put(KeyOf([]byte("d")), 11) // heavier than the budget: not kept
	if _, ok := m.get(KeyOf([]byte("d"))); ok || m.total != 8 {
		t.Fatalf("d kept or total %d", m.total)
	}
	if KeyOf([]byte("ab"), []byte("c")) == KeyOf([]byte("a"), []byte("bc")) {
		t.Fatal("keys of different parts collide")
	}
}
