package registry

import (
	"maps"
	"slices"

	"github.com/opencontainers/go-digest"
)

// maxDocsPerEntry bounds the decoded forms kept per cached manifest: one per
// media type it was decoded as (the served one and an index entry's), 4 is
// more than a manifest meets.
const maxDocsPerEntry = 4

// decode is decodeDocument for a manifest the content cache holds under d:
// the decoded form is kept beside the bytes, so a warm inspect does not parse
// the same JSON twice per request (parsing was ~8 % of wharfd's CPU under 64
// concurrent inspects). It is reused only when body is the cache's own slice for
// d, so it says nothing the verified bytes do not, and grants nothing: the
// caller has the bytes, so it has already passed the scope check. Other
// bodies are decoded as they are. Callers get a copy they may change.
func (c *contentCache) decode(host string, d digest.Digest, served string, body []byte) (*decoded, error) {
	if doc := c.decodedOf(d, served, body); doc != nil {
		return doc.clone(), nil
	}
	doc, err := decodeDocument(host, served, body)
	if err != nil {
		return nil, err // refused documents are not remembered: cheap to refuse again
	}
	c.keepDecoded(d, served, body, doc)
	return doc.clone(), nil
}

// entryFor is d's entry when body is its data (the same backing array).
// Called with c.mu held.
func (c *contentCache) entryFor(d digest.Digest, body []byte) *cacheEntry {
	if d == "" || len(body) == 0 {
		return nil
	}
	e, ok := c.index[d]
	if !ok {
		return nil
	}
	ce := e.Value.(*cacheEntry)
	if len(ce.data) != len(body) || &ce.data[0] != &body[0] {
		return nil
	}
	return ce
}

func (c *contentCache) decodedOf(d digest.Digest, served string, body []byte) *decoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ce := c.entryFor(d, body); ce != nil {
		return ce.docs[served]
	}
	return nil
}

func (c *contentCache) keepDecoded(d digest.Digest, served string, body []byte, doc *decoded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ce := c.entryFor(d, body)
	if ce == nil || len(ce.docs) >= maxDocsPerEntry {
		return
	}
	if _, ok := ce.docs[served]; ok {
		return
	}
	if ce.docs == nil {
		ce.docs = map[string]*decoded{}
	}
	ce.docs[served] = doc
	// A decoded form is charged as its bytes again: the structs hold about
	// as much as the JSON they came from.
	ce.docBytes += len(ce.data)
	c.size += len(ce.data)
	c.evict()
}

// clone copies what a caller could change in place (the slices and maps it
// hands on as RemoteImage.Layers, Resolved.Index, Annotations), so the kept
// form stays as decoded.
func (d *decoded) clone() *decoded {
	out := *d
	out.manifest.Layers = slices.Clone(d.manifest.Layers)
	out.manifest.Annotations = maps.Clone(d.manifest.Annotations)
	out.index.Manifests = slices.Clone(d.index.Manifests)
	out.index.Annotations = maps.Clone(d.index.Annotations)
	out.v1Layers = slices.Clone(d.v1Layers)
	out.v1Config = slices.Clone(d.v1Config)
	return &out
}
