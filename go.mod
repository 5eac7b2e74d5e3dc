module github.com/wharfproject/wharf

go 1.26.8

require (
	github.com/containerd/errdefs v1.0.0
	github.com/distribution/reference v0.6.0
	github.com/moby/docker-image-spec v1.3.1
	github.com/moby/moby/api v1.57.0
	github.com/opencontainers/go-digest v1.0.0
	github.com/opencontainers/image-spec v1.1.1
	github.com/sirupsen/logrus v1.10.2
)

require (
	github.com/docker/go-units v0.5.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
