// Package diff compares two images section by section: config, layers,
// pull cost, files, source and signer (the packages section is
// graph/packages' Compare). Every function here is pure: it is handed
// configs, descriptors, layer indexes and verdicts that graph resolved,
// and reads nothing itself.
//
// The files section indexes only the layers that differ. The layers both
// images share at the bottom (the longest common prefix, by digest) are
// the same bytes on both sides; only the layers above it can make a path
// differ. When the shared layers' indexes are at hand (cached by an
// earlier ls, cat or pull; never built for a diff), each side's whole view
// is merged and compared, so whiteouts and opaque directories over the
// shared layers are exact. Otherwise the paths the upper layers name are
// compared with each other, a whiteout names its path as removed, and a
// path only one side's upper layers name is reported with the other side
// marked Unindexed; a directory such a layer names (to hold a changed
// child) is not reported then, and what an opaque directory hid in the
// shared layers is not listed.
//
// Files: config.go, layers.go (layers and pull cost), files.go, source.go,
// signer.go.
package diff
