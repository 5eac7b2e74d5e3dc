package types

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Filters is the `filters` query parameter: {"key": {"value": true}}.
type Filters map[string]map[string]bool

// maxFiltersLen caps the filters parameter (64 KiB): it is a query string, and
// nothing legitimate comes near that size.
const maxFiltersLen = 64 << 10

// ParseFilters decodes the filters query parameter. It accepts the current
// form {"k":{"v":true}} and the legacy form {"k":["v"]}, as dockerd does.
// An empty string is no filter.
func ParseFilters(s string) (Filters, error) {
	if s == "" {
		return Filters{}, nil
	}
	if len(s) > maxFiltersLen {
		return nil, fmt.Errorf("filters parameter too long: %d bytes > %d", len(s), maxFiltersLen)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("invalid filters parameter: %w", err)
	}
	f := Filters{}
	for k, v := range raw {
		m := map[string]bool{}
		if err := json.Unmarshal(v, &m); err != nil {
			var list []string
			if err2 := json.Unmarshal(v, &list); err2 != nil {
				return nil, fmt.Errorf("invalid filter %q: %w", k, err)
			}
			for _, s := range list {
				m[s] = true
			}
		}
		f[k] = m
	}
	return f, nil
}

// Values returns the values of key, sorted.
func (f Filters) Values(key string) []string {
	var out []string
	for v, ok := range f[key] {
		if ok {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// Has reports whether key is set.
func (f Filters) Has(key string) bool { return len(f[key]) > 0 }

// Validate returns an error naming the first key not in allowed.
func (f Filters) Validate(allowed ...string) error {
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !ok[k] {
			return fmt.Errorf("Invalid filter '%s'", k)
		}
	}
	return nil
}

// Encode returns the JSON form, for clients.
func (f Filters) Encode() string {
	if len(f) == 0 {
		return ""
	}
	b, _ := json.Marshal(f)
	return string(b)
}
