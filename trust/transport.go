package trust

// Transports by which an image arrives other than a registry (docker), as
// containers-policy.json(5) names them: the signature policy judges an
// image from an archive under its transport.
const (
	// TransportDockerArchive is a docker-save tar (docker load).
	TransportDockerArchive = "docker-archive"
	// TransportOCIArchive is an OCI image layout tar (sync's archive
	// import).
	TransportOCIArchive = "oci-archive"
)
