package server

import (
	"strconv"
	"strings"
)

// The stream media types GET /events offers (moby api/types MediaType*).
const (
	mediaTypeJSONLines    = "application/jsonl"
	mediaTypeNDJSON       = "application/x-ndjson"
	mediaTypeJSONSequence = "application/json-seq"
)

// eventStreamTypes are the offers, in dockerd's order of preference when
// the client weighs them equally.
var eventStreamTypes = []string{mediaTypeJSONLines, mediaTypeNDJSON, mediaTypeJSONSequence}

// maxAcceptRanges bounds the media ranges read from the Accept headers: a
// client names a handful; the rest of a hostile header is ignored.
const maxAcceptRanges = 64

// matchAcceptStrict is dockerd's contenttype.MatchAcceptStrict: of offers,
// the one an Accept media range names exactly (no wildcards, q=0 refused)
// with the highest q; equal q goes to the earlier offer. "" when none.
func matchAcceptStrict(accept []string, offers []string) string {
	type spec struct {
		value string
		q     float64
	}
	var specs []spec
	for _, h := range accept {
		for part := range strings.SplitSeq(h, ",") {
			if len(specs) == maxAcceptRanges {
				break
			}
			value, params, _ := strings.Cut(part, ";")
			sp := spec{value: strings.ToLower(strings.TrimSpace(value)), q: 1}
			for p := range strings.SplitSeq(params, ";") {
				k, v, ok := strings.Cut(p, "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
					continue
				}
				q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil || q < 0 || q > 1 {
					q = 0 // a q that does not parse accepts nothing
				}
				sp.q = q
			}
			if sp.value != "" {
				specs = append(specs, sp)
			}
		}
	}
	best, bestQ := "", -1.0
	for _, offer := range offers {
		for _, sp := range specs {
			if sp.q == 0 || sp.value != offer {
				continue
			}
			if sp.q > bestQ {
				best, bestQ = offer, sp.q
			}
		}
	}
	return best
}
