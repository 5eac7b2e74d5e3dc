package types

// API versions wharfd speaks. DefaultAPIVersion is what the daemon advertises
// in Api-Version and answers unversioned paths with; the docker CLI and the Go
// SDK use min(their own, this) after HEAD /_ping. MinAPIVersion is dockerd's
// absolute floor (api.MinSupportedAPIVersion): below it the field gating of
// the Engine API is no longer defined.
const (
	DefaultAPIVersion = "1.50"
	MinAPIVersion     = "1.24"
)
