package server

import (
	"bytes"
	"encoding/json"
	"sort"
)

// orderedObject encodes m as a JSON object whose keys come in order first
// (those present), then the rest sorted. Version gating works on maps, and a
// map alone would print inspect fields alphabetically; dockerd prints them in
// struct order, which is what users read in `docker inspect`.
func orderedObject(m map[string]json.RawMessage, order []string) []byte {
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := make(map[string]bool, len(m))
	first := true
	emit := func(k string) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(m[k])
	}
	for _, k := range order {
		if _, ok := m[k]; ok && !seen[k] {
			seen[k] = true
			emit(k)
		}
	}
	rest := make([]string, 0, len(m))
	for k := range m {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		emit(k)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// toObject marshals v and decodes it as a JSON object; v must marshal to one.
func toObject(v any) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func isNullOrMissing(m map[string]json.RawMessage, k string) bool {
	v, ok := m[k]
	return !ok || string(v) == "null"
}
