package hosts

import "fmt"

// maxHeaderValue caps one hosts.toml header value (8 KiB): the largest
// header line a common front end accepts by default (nginx's
// large_client_header_buffers is 8 KiB); a longer value would be refused
// by the mirror on every request anyway.
const maxHeaderValue = 8 << 10

// checkHeader refuses a hosts.toml header that Go's transport would refuse
// on every request to the host (so that every request to a mirror failed
// and fell back to the upstream, and a reload said "nothing changed"):
// the name must be an RFC 9110 token, the value must hold no control
// character but a tab — no CR or LF that would start another header, no
// NUL. These are the rules of golang.org/x/net/http/httpguts
// (ValidHeaderFieldName, ValidHeaderFieldValue), which net/http applies;
// that module is not a dependency of wharf, so the rules are written here.
// The value is never repeated in the error: it may be a credential.
func checkHeader(name string, values []string) error {
	if name == "" {
		return fmt.Errorf("header: empty name")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return fmt.Errorf("header %q: invalid name: byte %#02x at %d is not a token character (RFC 9110)", name, name[i], i)
		}
	}
	for _, v := range values {
		if len(v) > maxHeaderValue {
			return fmt.Errorf("header %q: value longer than %d bytes", name, maxHeaderValue)
		}
		for i := 0; i < len(v); i++ {
			if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
				return fmt.Errorf("header %q: invalid value: control byte %#02x at %d (CR, LF, NUL and other controls are refused)", name, b, i)
			}
		}
	}
	return nil
}

// isTokenChar: RFC 9110 section 5.6.2, tchar.
func isTokenChar(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	switch b {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
