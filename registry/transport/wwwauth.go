package transport

import (
	"sort"
	"strings"
)

// WWW-Authenticate, parsed (RFC 9110 §11.6.1): every challenge of every
// header value, auth-params or token68, bounded.

// Challenge is one auth challenge of a WWW-Authenticate header.
type Challenge struct {
	Scheme  string            // lower case: "bearer", "basic", "negotiate"…
	Params  map[string]string // auth-params, names in lower case; the first of a repeated name wins
	Token68 string            // the token68 form (Negotiate, NTLM), when given instead of params
}

// String is c as a header value: the scheme, then the params sorted by
// name, each quoted (only `"` and `\` escaped).
func (c Challenge) String() string {
	var b strings.Builder
	switch c.Scheme {
	case "bearer":
		b.WriteString("Bearer")
	case "basic":
		b.WriteString("Basic")
	default:
		b.WriteString(c.Scheme)
	}
	if c.Token68 != "" {
		b.WriteString(" " + c.Token68)
		return b.String()
	}
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(k + `="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(c.Params[k]) + `"`)
	}
	return b.String()
}

// preferredChallenge picks the challenge wharfd answers among every one
// the response carries: Bearer with a realm, else Basic. A registry behind
// a front end may offer Negotiate or NTLM first (as a header of its own or
// first in one header): Client answers the chosen one. ok is false when
// neither is offered.
func PreferredChallenge(values []string) (c Challenge, ok bool) {
	var basic *Challenge
	for _, ch := range ParseChallenges(values) {
		switch {
		case ch.Scheme == "bearer" && ch.Params["realm"] != "":
			return ch, true
		case ch.Scheme == "basic" && basic == nil:
			basic = &ch
		}
	}
	if basic != nil {
		return *basic, true
	}
	return Challenge{}, false
}

// maxChallenges bounds what one response may make us parse: registries
// send one or two; a header listing thousands is not a challenge.
const maxChallenges = 16

// parseChallenges parses every challenge of every WWW-Authenticate value
// (RFC 7235 §4.1: several headers, and several comma-separated challenges
// in one; a challenge is a scheme and then a token68 or auth-params).
// Unparsable input ends the parse; what came before it is kept.
func ParseChallenges(values []string) []Challenge {
	var out []Challenge
	for _, v := range values {
		p := challengeParser{s: v}
		for len(out) < maxChallenges {
			c, ok := p.next()
			if !ok {
				break
			}
			out = append(out, c)
		}
	}
	return out
}

type challengeParser struct {
	s string
	i int
}

func isTChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isToken68Char(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0
}

func (p *challengeParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *challengeParser) token() string {
	j := p.i
	for p.i < len(p.s) && isTChar(p.s[p.i]) {
		p.i++
	}
	return p.s[j:p.i]
}

func (p *challengeParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// atParam reports whether an auth-param (token BWS "=" BWS value) starts
// at the current position, without moving. "abc=" followed by nothing, a
// comma or more "=" is a token68, not a param.
func (p *challengeParser) atParam() bool {
	q := *p
	if q.token() == "" {
		return false
	}
	q.skipSpace()
	if q.peek() != '=' {
		return false
	}
	q.i++
	q.skipSpace()
	c := q.peek()
	return c != 0 && c != ',' && c != '='
}

// next returns the next challenge; ok is false at the end or at garbage.
func (p *challengeParser) next() (Challenge, bool) {
	for p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
	scheme := p.token()
	if scheme == "" {
		return Challenge{}, false
	}
	c := Challenge{Scheme: strings.ToLower(scheme), Params: map[string]string{}}
	if p.peek() != ' ' && p.peek() != '\t' {
		return c, true // no params: the end, or a comma before the next challenge
	}
	p.skipSpace()
	if !p.atParam() {
		// A token68, or nothing (then the next challenge follows a comma).
		j := p.i
		for p.i < len(p.s) && isToken68Char(p.s[p.i]) {
			p.i++
		}
		if p.i > j {
			for p.i < len(p.s) && p.s[p.i] == '=' {
				p.i++
			}
			c.Token68 = p.s[j:p.i]
		}
		return c, true
	}
	for {
		key := strings.ToLower(p.token())
		p.skipSpace()
		p.i++ // '=', as atParam saw
		p.skipSpace()
		var val string
		if p.peek() == '"' {
			v, ok := p.quoted()
			if !ok {
				p.i = len(p.s)
				return c, true
			}
			val = v
		} else {
			// RFC 7235 wants a token; registries write URLs unquoted too
			// (realm=https://host/token): take everything to the next
			// comma or space.
			j := p.i
			for p.i < len(p.s) && p.s[p.i] != ',' && p.s[p.i] != ' ' && p.s[p.i] != '\t' {
				p.i++
			}
			val = p.s[j:p.i]
		}
		if _, dup := c.Params[key]; !dup {
			c.Params[key] = val
		}
		p.skipSpace()
		if p.peek() != ',' {
			return c, true
		}
		for p.i < len(p.s) && (p.s[p.i] == ',' || p.s[p.i] == ' ' || p.s[p.i] == '\t') {
			p.i++
		}
		if !p.atParam() {
			return c, true // the next challenge's scheme
		}
	}
}

// quoted reads a quoted-string at the current position (which is '"');
// ok is false when it does not end.
func (p *challengeParser) quoted() (string, bool) {
	var b strings.Builder
	for j := p.i + 1; j < len(p.s); j++ {
		switch ch := p.s[j]; ch {
		case '\\':
			if j+1 < len(p.s) {
				j++
				b.WriteByte(p.s[j])
			}
		case '"':
			p.i = j + 1
			return b.String(), true
		default:
			b.WriteByte(ch)
		}
	}
	return "", false
}
