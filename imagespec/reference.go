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
