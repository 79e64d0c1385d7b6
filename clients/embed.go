// Package clients holds the client adapters that ship with locktorture
// (clients/python: redis-py's Lock, kazoo's, python-etcd3's and tooz's,
// the last three over lt_protocol.py; clients/java: Apache Curator's
// InterProcessMutex, CuratorLock.java started by curator_lock.sh;
// clients/node: the Node.js kit, redis-lock.js and pg-lock.js over
// protocol.js, started by run.sh; clients/go-example: a lock of the
// user's own in Go). The built-in
// scenarios that run an adapter name it by its path in this repository;
// Resolve finds it from anywhere, so those scenarios run from any
// directory and from an installed binary.
package clients

import (
	"embed"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

//go:embed python/redis_py_lock.py python/redis_py_try_lock.py python/lt_protocol.py python/kazoo_lock.py python/etcd3_lock.py python/tooz_lock.py java/curator_lock.sh java/CuratorLock.java node/run.sh node/protocol.js node/redis-lock.js node/pg-lock.js
var adapters embed.FS

// helpers are modules the adapters beside them import (or, for
// curator_lock.sh, the source it compiles and starts; for node/run.sh,
// the adapters it starts by name): written with any adapter of their
// directory.
var helpers = []string{"python/lt_protocol.py", "java/CuratorLock.java", "node/run.sh", "node/protocol.js", "node/redis-lock.js", "node/pg-lock.js"}

// Resolve returns command with each argument that names a shipped adapter
// by its repository path ("clients/python/redis_py_lock.py") and is not
// found from the working directory replaced by a copy of the adapter
// written under dir. Other arguments are left as they are.
func Resolve(command []string, dir string) ([]string, error) {
	out := append([]string(nil), command...)
	for i, a := range out {
		rel, ok := strings.CutPrefix(filepath.ToSlash(a), "clients/")
		if !ok {
			continue
		}
		if _, err := os.Stat(a); err == nil {
			continue
		}
		b, err := adapters.ReadFile(rel)
		if err != nil {
			continue // not one of ours: the program's own path, left to fail as it will
		}
		p := filepath.Join(dir, "clients", filepath.FromSlash(rel))
		if err := write(p, b); err != nil {
			return nil, err
		}
		for _, h := range helpers {
			if path.Dir(h) != path.Dir(rel) || h == rel {
				continue
			}
			hb, err := adapters.ReadFile(h)
			if err != nil {
				return nil, fmt.Errorf("clients: %w", err)
			}
			if err := write(filepath.Join(dir, "clients", filepath.FromSlash(h)), hb); err != nil {
				return nil, err
			}
		}
		out[i] = p
	}
	return out, nil
}

// write writes an adapter's file, and its directory.
func write(p string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("clients: %w", err)
	}
	if err := os.WriteFile(p, b, 0o755); err != nil {
		return fmt.Errorf("clients: %w", err)
	}
	return nil
}
