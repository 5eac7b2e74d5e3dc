package graph

import (
	"context"
	"encoding/json"
	"io"

	"github.com/moby/moby/api/types/container"

	"github.com/wharfproject/wharf/api/types"
	"github.com/wharfproject/wharf/graph/contents"
	"github.com/wharfproject/wharf/graph/distribution"
	"github.com/wharfproject/wharf/graph/internal/ahead"
)

const (
	// aheadHold caps what one remote contents read keeps while the
	// registry confirms the image it started on (4 MiB): a listing of
	// about 20,000 entries, or a file of 4 MiB, is ready when a warm
	// HEAD returns; a bigger answer waits there, its memory bounded.
	aheadHold = 4 << 20
	// aheadBudget bounds the images remembered to start reads on (16 MiB
	// by aheadWeight): a few thousand typical images; one with a
	// config of several MiB weighs what it holds.
	aheadBudget = 16 << 20
)

// aheadWeight is what one remembered image holds: its parsed config, by
// the size it was read at, and its layer descriptors.
func aheadWeight(rl *distribution.RemoteLayers) int {
	return int(rl.ConfigDescriptor.Size) + 256*len(rl.Layers) + 1024
}

func newAheadMemo() *ahead.Memo[*distribution.RemoteLayers] {
	return ahead.NewMemo(aheadBudget, aheadWeight)
}

// remoteContents runs read on name's remote image. A caller that asked the
// same (name, platform, credentials) before has its read started on that
// image while the registry is asked again: the registry's round trip and
// the read overlap, and what the read gives is held behind the gate until
// the registry names the same manifest (graph/internal/ahead).
func (s *Service) remoteContents(ctx context.Context, name string, opts types.FilesOptions, read func(context.Context, *contents.Image, *ahead.Gate) error) error {
	resolve := func(ctx context.Context) (*distribution.RemoteLayers, error) {
		return s.dist.RemoteLayers(ctx, name, opts)
	}
	readOn := func(ctx context.Context, rl *distribution.RemoteLayers, g *ahead.Gate) error {
		return read(ctx, remoteImage(rl), g)
	}
	k, err := aheadKey(name, opts)
	if err != nil {
		rl, err := resolve(ctx)
		if err != nil {
			return err
		}
		return readOn(ctx, rl, ahead.Open())
	}
	same := func(guess, fresh *distribution.RemoteLayers) bool {
		return guess.Manifest.Digest == fresh.Manifest.Digest
	}
	return ahead.Run(ctx, s.guesses, k, same, resolve, readOn)
}

// aheadKey names a remote read by what decides its answer: the name as
// asked, the platform and the credentials (hashed: the memo keeps no
// secret).
func aheadKey(name string, opts types.FilesOptions) (ahead.Key, error) {
	var parts [][]byte
	for _, v := range []any{opts.Platform, opts.Auth, opts.Registries, opts.MetaHeaders} {
		b, err := json.Marshal(v)
		if err != nil {
			return ahead.Key{}, err
		}
		parts = append(parts, b)
	}
	return ahead.KeyOf(append(parts, []byte(name))...), nil
}

func (s *Service) remoteFiles(ctx context.Context, name string, opts types.FilesOptions, emit func(types.FileEntry) error) error {
	return s.remoteContents(ctx, name, opts, func(ctx context.Context, img *contents.Image, g *ahead.Gate) error {
		h := ahead.NewHeld(ctx, g, aheadHold, entryWeight, emit)
		if err := s.contents.Files(ctx, img, opts, h.Put); err != nil {
			return err
		}
		return h.Flush()
	})
}

// entryWeight is about what one held entry costs in memory.
func entryWeight(e types.FileEntry) int {
	return len(e.Path) + len(e.Linkname) + len(e.Layer) + len(e.Digest) + 128
}

func (s *Service) remoteStat(ctx context.Context, name string, opts types.FilesOptions) (container.PathStat, error) {
	var st container.PathStat
	err := s.remoteContents(ctx, name, opts, func(ctx context.Context, img *contents.Image, g *ahead.Gate) error {
		v, err := s.contents.Stat(ctx, img, opts.Path)
		if err != nil {
			return err
		}
		if err := g.Wait(ctx); err != nil {
			return err
		}
		st = v
		return nil
	})
	return st, err
}

func (s *Service) remoteArchive(ctx context.Context, name string, opts types.FilesOptions, start func(container.PathStat) (io.Writer, error)) error {
	return s.remoteContents(ctx, name, opts, func(ctx context.Context, img *contents.Image, g *ahead.Gate) error {
		var hw *ahead.Writer
		err := s.contents.Archive(ctx, img, opts.Path, func(st container.PathStat) (io.Writer, error) {
			if hw == nil {
				hw = ahead.NewWriter(ctx, g, aheadHold, func() (io.Writer, error) { return start(st) })
			}
			return hw, nil
		})
		if err != nil {
			return err
		}
		if hw == nil {
			return g.Wait(ctx)
		}
		return hw.Flush()
	})
}
