package server

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/moby/moby/api/types/image"

	"github.com/wharfproject/wharf/api/types"
)

// getImageAttestations is GET /images/{name}/attestations (API 1.55): the
// in-toto statements attached to an image, as dockerd's
// getImageAttestations reads the query — one platform at most (the
// parameter is declared repeatable for later), type= repeatable and
// trimmed, statement= a bool — plus wharf's remote=1 (as on inspect: the
// registry's answer, with X-Registry-Auth). Always a JSON array. Like
// dockerd's, the route answers at every API version; its clients ask for
// 1.55 (moby's client refuses below).
func (s *Server) getImageAttestations(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	if err := parseForm(r); err != nil {
		return err
	}
	opts := types.AttestationOptions{
		Statement: boolValue(r, "statement"),
		Remote:    boolValue(r, "remote"),
	}
	if ps := r.Form["platform"]; len(ps) > 0 {
		if len(ps) > 1 {
			return invalidArg("only one platform value is currently supported")
		}
		if ps[0] != "" {
			p, err := decodePlatformJSON(ps[0])
			if err != nil {
				return err
			}
			opts.Platform = p
		}
	}
	for _, pt := range r.Form["type"] {
		if pt = strings.TrimSpace(pt); pt != "" {
			opts.PredicateTypes = append(opts.PredicateTypes, pt)
		}
	}
	// With remote=1, and for a local image whose attestations must be read
	// from its registry: the registry package gives a set that names its
	// registry (ServerAddress) to that registry only.
	auth, regs, err := requestCredentials(r, decodeAuth)
	if err != nil {
		return err
	}
	opts.Auth, opts.Registries, opts.MetaHeaders = auth, regs, metaHeaders(r)
	return s.streamAttestations(w, r, vars["name"], opts)
}

// streamAttestations writes the answer a statement at a time: the same
// bytes writeJSON writes of the whole list (an array, each statement
// compacted with <, > and & escaped, as json.Marshal writes a RawMessage,
// and a newline), holding one statement's body, never the set and its
// JSON: holding them would cost ~4.5 times the 64 MiB bound (an answer
// of 60 MiB, ~295 MB of resident memory; three at once, ~780 MB; streamed,
// ~70 and ~115 MB: AttestationsMemorySuite). An error before the first statement is
// answered as usual (the bounds are all checked before it); one after it
// (the header is sent) aborts the connection, so that a client never takes
// a cut list for a whole one.
func (s *Server) streamAttestations(w http.ResponseWriter, r *http.Request, name string, opts types.AttestationOptions) error {
	var bw *bufio.Writer
	err := s.backend.ImageAttestations(r.Context(), name, opts, func(st image.AttestationStatement) error {
		sep := byte(',')
		if bw == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(w, 32<<10)
			sep = '['
		}
		if err := bw.WriteByte(sep); err != nil {
			return err
		}
		return writeAttestation(bw, st)
	})
	if err != nil && bw == nil {
		return err
	}
	if err != nil {
		s.log.WithError(err).Error("image attestations failed after the response started")
		panic(http.ErrAbortHandler)
	}
	if bw == nil {
		writeJSON(w, http.StatusOK, []image.AttestationStatement{})
		return nil
	}
	_, _ = bw.WriteString("]\n")
	if err := bw.Flush(); err != nil {
		panic(http.ErrAbortHandler)
	}
	return nil
}

// writeAttestation writes st as json.Marshal does. Statement is the last
// field: the rest is marshalled without it (small), and the statement is
// written after it straight from its body, compacted and escaped
// (writeCompactJSON), not through a marshalled copy of it.
func writeAttestation(w *bufio.Writer, st image.AttestationStatement) error {
	body := st.Statement
	st.Statement = nil
	head, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if body == nil {
		_, err = w.Write(head)
		return err
	}
	if _, err := w.Write(head[:len(head)-1]); err != nil { // without its '}'
		return err
	}
	if _, err := w.WriteString(`,"Statement":`); err != nil {
		return err
	}
	if err := writeCompactJSON(w, *body); err != nil {
		return err
	}
	return w.WriteByte('}')
}
