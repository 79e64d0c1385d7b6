package locktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
	// Every kind of server, registered with cluster's registry.
	_ "github.com/locktorture/locktorture/cluster/kinds/all"
)

// Servers shared by the subtests of one test binary: started by the first
// scenario that can share them, stopped by Main when the tests are done.
// Each run on them is an external run (a servers file the suite writes),
// so each gets a key namespace of its own and removes its keys after.

type sharedSet struct {
	cl   *cluster.Cluster
	file string
	err  error
}

var (
	sharedMu sync.Mutex
	shared   = map[string]*sharedSet{}
)

// sharedServers returns the servers file of the shared servers of kinds
// in mode where, starting them on first use.
func sharedServers(where string, kinds []string, images map[string]string) (string, error) {
	ks := append([]string(nil), kinds...)
	sort.Strings(ks)
	key := fmt.Sprint(where, " ", strings.Join(ks, ","), " ", images)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if s, ok := shared[key]; ok {
		return s.file, s.err
	}
	s := &sharedSet{}
	shared[key] = s
	s.cl, s.file, s.err = startShared(where, kinds, images)
	return s.file, s.err
}

func startShared(where string, kinds []string, images map[string]string) (*cluster.Cluster, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Locked as every run's own servers are (and the CLI's): a lock that
	// ignores Config.Auth fails here as it would there.
	cl, err := cluster.New(cluster.Options{Servers: where, Images: images, Locked: true})
	if err != nil {
		return nil, "", err
	}
	if err := cl.StartKinds(ctx, kinds, cluster.StartOptions{}); err != nil {
		_ = cl.Close()
		return nil, "", fmt.Errorf("starting the shared servers: %w", err)
	}
	doc, err := serversFile(cl.ClientServers(-1))
	var b []byte
	if err == nil {
		b, err = yaml.Marshal(doc)
	}
	if err == nil {
		file := filepath.Join(cl.TempDir(), "servers.yaml")
		if err = os.WriteFile(file, b, 0o600); err == nil {
			return cl, file, nil
		}
	}
	_ = cl.Close()
	return nil, "", fmt.Errorf("locktest: the shared servers' file: %w", err)
}

// envSharedPassword starts the names of the environment variables that
// hold the shared servers' passwords (a servers file names a password by
// reference only): set in the test process, unset in client processes,
// which get their credentials in the open request.
const envSharedPassword = "LOCKTEST_SHARED_PW_"

var sharedPasswords int

// serversFile is the servers file's document naming g's servers and what
// they ask, each password in an environment variable of its own: by the
// kind registry, a kind named by a DSN gives its one string, any other its
// list of addresses.
func serversFile(g cluster.ServerSet) (map[string]any, error) {
	doc := map[string]any{}
	for _, k := range cluster.Kinds() {
		addrs := g.Servers[k.Name]
		if _, dsn := k.Abilities.(cluster.DSNAddressed); dsn && len(addrs) > 0 {
			doc[k.Name] = addrs[0]
			continue
		}
		var list []any
		for i, addr := range addrs {
			user, pw := credentialsOf(g.Auth.For(k.Name, i))
			if pw == "" {
				list = append(list, addr)
				continue
			}
			sharedPasswords++
			env := fmt.Sprint(envSharedPassword, sharedPasswords)
			if err := os.Setenv(env, pw); err != nil {
				return nil, fmt.Errorf("the shared servers' password: %w", err)
			}
			list = append(list, map[string]string{"addr": addr, "username": user, "password_env": env})
		}
		if len(list) > 0 {
			doc[k.Name] = list
		}
	}
	return doc, nil
}

// credentialsOf is a's user and password, ZooKeeper's digest (user:pass)
// included.
func credentialsOf(a *cluster.Auth) (user, password string) {
	switch {
	case a == nil:
		return "", ""
	case a.Scheme == "digest":
		user, password, _ = strings.Cut(a.Digest, ":")
		return user, password
	}
	return a.Username, a.Password
}

// configOf are the cluster's servers as process p dials them (through its
// own links), and what they ask it to prove.
func configOf(cl *cluster.Cluster, p int) (Servers, map[string][]Credentials) {
	g := cl.ClientServers(p)
	return asServers(g), asCredentials(g.Auth)
}

// asCredentials are a server set's credentials as a Config holds them
// (nil when no server asks for any).
func asCredentials(set cluster.AuthSet) map[string][]Credentials {
	var out map[string][]Credentials
	for kind, l := range set {
		for _, a := range l {
			var c Credentials
			if a != nil {
				c = Credentials{Username: a.Username, Password: a.Password, Scheme: a.Scheme, Auth: a.Digest}
				if t := a.TLS; t != nil {
					c.TLS = &TLS{CA: t.CA, Cert: t.Cert, Key: t.Key, ServerName: t.ServerName}
				}
			}
			if out == nil {
				out = map[string][]Credentials{}
			}
			out[kind] = append(out[kind], c)
		}
	}
	return out
}

// stopShared stops every shared server.
func stopShared() error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	var errs []error
	for k, s := range shared {
		if s.cl != nil {
			errs = append(errs, s.cl.Close())
		}
		delete(shared, k)
	}
	return errors.Join(errs...)
}
