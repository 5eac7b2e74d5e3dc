package imagespec

// FormatReference writes an image reference as docker prints one,
// NAME[:TAG][@DIGEST]: the tag and the digest each only when given. It is
// the one rendering of that form, for the registry client's and the
// daemon's logs and results and for the CLI alike.
func FormatReference(name, tag, digest string) string {
	s := name
	if tag != "" {
		s += ":" + tag
	}
	if digest != "" {
		s += "@" + digest
	}
	return s
}

// ValidTag reports whether s is a tag by the distribution spec's grammar,
// [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}: the one check for tags read from
// registries, requests and files.
func ValidTag(s string) bool {
	if len(s) == 0 || len(s) > 128 || !tagByte(s[0]) || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !tagByte(s[i]) {
			return false
		}
	}
	return true
}

func tagByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
