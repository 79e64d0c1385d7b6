package checker

// ServerSource says where a run's servers came from: the mode (local,
// docker), the image each kind of server ran from, and each server's
// version as the server itself reported it. It is a record for people and
// tools comparing runs; no checker reads it.
type ServerSource struct {
	// Mode is local or docker.
	Mode string `json:"mode"`
	// Images maps a kind of server (redis, postgres, etcd) to its image.
	Images map[string]string `json:"images,omitempty"`
	// Versions maps a server's name (redis-0, postgres, etcd-1) to the
	// version it reported.
	Versions map[string]string `json:"versions,omitempty"`
}
