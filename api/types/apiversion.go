package types

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// API versions wharfd speaks. DefaultAPIVersion is what the daemon advertises
// in Api-Version and answers unversioned paths with; the docker CLI and the Go
// SDK use min(their own, this) after HEAD /_ping.
//
// The lowest version accepted is the operator's (wharfd --min-api-version,
// daemon.json "min-api-version"), DefaultMinAPIVersion unless set. It may not
// go below MinSupportedAPIVersion, dockerd 20.10's floor: the version gate of
// api/server shapes answers down to it, and clients that pin an old version
// without negotiating still exist (skopeo 1.9's docker-daemon: transport
// sends 1.22). dockerd 25+ refuses below 1.24 by default and lets the
// operator lower that; wharfd, an image daemon whose old clients are
// image tools, accepts them by default (docs/compatibility.md).
const (
	DefaultAPIVersion      = "1.55"
	DefaultMinAPIVersion   = "1.12"
	MinSupportedAPIVersion = "1.12"
)

// CompareAPIVersions compares dotted API versions numerically ("1.9" <
// "1.10"); a missing or non-numeric part counts as 0, as in moby's
// versions.compare.
func CompareAPIVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	n := max(len(as), len(bs))
	for i := 0; i < n; i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
	}
	return 0
}

var apiVersionForm = regexp.MustCompile(`^1\.[0-9]{1,4}$`)

// ValidateMinAPIVersion checks an operator's minimum API version, with
// dockerd's wording (ValidateMinAPIVersion of its daemon config).
func ValidateMinAPIVersion(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("value is empty")
	case strings.HasPrefix(v, "v") || strings.HasPrefix(v, "V"):
		return fmt.Errorf(`API version must be provided without "v" prefix`)
	case !apiVersionForm.MatchString(v):
		return fmt.Errorf("%q is not an API version (1.NN)", v)
	case CompareAPIVersions(v, MinSupportedAPIVersion) < 0:
		return fmt.Errorf("minimum supported API version is %s: %s", MinSupportedAPIVersion, v)
	case CompareAPIVersions(v, DefaultAPIVersion) > 0:
		return fmt.Errorf("maximum supported API version is %s: %s", DefaultAPIVersion, v)
	}
	return nil
}
