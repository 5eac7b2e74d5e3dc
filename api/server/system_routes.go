package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/registry"

	"github.com/wharfproject/wharf/api/types"
)

func (s *Server) ping(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	h := w.Header()
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("Pragma", "no-cache")
	h.Set("Swarm", "inactive")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method == http.MethodHead {
		h.Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	h.Set("Content-Length", "2")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write([]byte("OK"))
	return err
}

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	writeJSON(w, http.StatusOK, s.backend.SystemVersion(r.Context()))
	return nil
}

func (s *Server) getInfo(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	info, err := s.backend.SystemInfo(r.Context())
	if err != nil {
		return err
	}
	regs := s.backend.RegistryStatus(r.Context())
	search := s.backend.SearchRegistries(r.Context())
	version := apiVersionFrom(r.Context())
	if !versionLess(version, "1.50") {
		writeJSON(w, http.StatusOK, types.Info{Info: info, WharfRegistries: regs, WharfSearchRegistries: search})
		return nil
	}
	// Fields older API versions still show (dockerd's getInfo).
	m, err := toObject(info)
	if err != nil {
		return err
	}
	if len(regs) > 0 {
		m["WharfRegistries"] = rawJSON(regs)
	}
	if len(search) > 0 {
		m["WharfSearchRegistries"] = rawJSON(search)
	}
	m["BridgeNfIptables"] = json.RawMessage("false")
	m["BridgeNfIp6tables"] = json.RawMessage("false")
	if versionLess(version, "1.47") && !isNullOrMissing(m, "RegistryConfig") {
		rc := map[string]json.RawMessage{}
		if err := json.Unmarshal(m["RegistryConfig"], &rc); err == nil {
			rc["AllowNondistributableArtifactsCIDRs"] = json.RawMessage("null")
			rc["AllowNondistributableArtifactsHostnames"] = json.RawMessage("null")
			m["RegistryConfig"] = orderedObject(rc, []string{"AllowNondistributableArtifactsCIDRs", "AllowNondistributableArtifactsHostnames", "InsecureRegistryCIDRs", "IndexConfigs", "Mirrors"})
		}
	}
	writeRawJSON(w, orderedObject(m, infoOrder))
	return nil
}

// infoOrder is the field order of system.Info, for the map-based rendering
// of older API versions.
var infoOrder = []string{
	"ID", "Containers", "ContainersRunning", "ContainersPaused", "ContainersStopped",
	"Images", "Driver", "DriverStatus", "SystemStatus", "Plugins", "MemoryLimit",
	"SwapLimit", "CpuCfsPeriod", "CpuCfsQuota", "CPUShares", "CPUSet", "PidsLimit",
	"IPv4Forwarding", "BridgeNfIptables", "BridgeNfIp6tables", "Debug", "NFd",
	"OomKillDisable", "NGoroutines", "SystemTime", "LoggingDriver", "CgroupDriver",
	"CgroupVersion", "NEventsListener", "KernelVersion", "OperatingSystem",
	"OSVersion", "OSType", "Architecture", "IndexServerAddress", "RegistryConfig",
	"NCPU", "MemTotal", "GenericResources", "DockerRootDir", "HttpProxy",
	"HttpsProxy", "NoProxy", "Name", "Labels", "ExperimentalBuild", "ServerVersion",
	"Runtimes", "DefaultRuntime", "Swarm", "LiveRestoreEnabled", "Isolation",
	"InitBinary", "ContainerdCommit", "RuncCommit", "InitCommit", "SecurityOptions",
	"ProductLicense", "DefaultAddressPools", "FirewallBackend", "CDISpecDirs",
	"Containerd", "Warnings",
}

func (s *Server) getDiskUsage(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	du, err := s.backend.SystemDiskUsage(r.Context())
	if err != nil {
		return err
	}
	version := apiVersionFrom(r.Context())
	if !versionLess(version, "1.52") {
		if err := parseForm(r); err != nil {
			return err
		}
		return writeDiskUsage152(w, r, du)
	}
	if !versionLess(version, "1.48") {
		writeJSON(w, http.StatusOK, du)
		return nil
	}
	// The image summaries of older versions, as in GET /images/json: no
	// Descriptor below 1.48, VirtualSize (= Size) below 1.44. Containers
	// stays a count (0), as dockerd counts them for df.
	m, err := toObject(du)
	if err != nil {
		return err
	}
	images := make([]json.RawMessage, 0, len(du.Images))
	for _, img := range du.Images {
		img.Descriptor = nil
		if !versionLess(version, "1.44") {
			images = append(images, rawJSON(img))
			continue
		}
		im, err := toObject(img)
		if err != nil {
			return err
		}
		im["VirtualSize"] = rawJSON(img.Size)
		images = append(images, orderedObject(im, nil))
	}
	m["Images"] = rawJSON(images)
	writeRawJSON(w, orderedObject(m, []string{"LayersSize", "Images", "Containers", "Volumes", "BuildCache", "BuilderSize"}))
	return nil
}

// authResponse is POST /auth's answer (field order as dockerd).
type authResponse struct {
	IdentityToken string
	Status        string
}

// postAuth takes a plain JSON AuthConfig body (not base64). The body holds a
// password: it is never logged.
func (s *Server) postAuth(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	var auth registry.AuthConfig
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err := dec.Decode(&auth); err != nil {
		if err == io.EOF {
			return invalidArg("missing AuthConfig body")
		}
		return invalidArg("invalid AuthConfig body: %v", err)
	}
	token, err := s.backend.Login(r.Context(), &auth)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, authResponse{IdentityToken: token, Status: "Login Succeeded"})
	return nil
}

// getImagesSearch answers GET /images/search: wharfd has no registry search
// (distribution v3 has none either), so the docker CLI prints a clear error.
func (s *Server) getImagesSearch(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	return fmt.Errorf("image search is not supported by wharfd%.0w", errdefs.ErrNotImplemented)
}

func (s *Server) getContainersJSON(w http.ResponseWriter, r *http.Request, _ map[string]string) error {
	writeJSON(w, http.StatusOK, []struct{}{})
	return nil
}

// getContainerByName answers the probe of `docker inspect X`: a JSON 404 lets
// the CLI move on to images. It is JSON at every API version (not the plain
// text that errors get below 1.24), so it is written here rather than
// returned; its status is still the NotFound class's (statusFromError).
func (s *Server) getContainerByName(w http.ResponseWriter, r *http.Request, vars map[string]string) error {
	writeError(w, "", fmt.Errorf("No such container: %s%.0w", vars["name"], errdefs.ErrNotFound))
	return nil
}
