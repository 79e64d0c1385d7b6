package backends

import (
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/locktorture/locktorture/clients"
)

// The Java library row: Apache Curator's InterProcessMutex, as its docs
// show it, driven by clients/java/CuratorLock.java (docs/client-protocol.md),
// which clients/java/curator_lock.sh compiles once against Debian 12's jars
// and starts, one JVM per client (make deps installs the JDK and the jars:
// ClientPackages). Its claim, and what each family expects of it, are in
// docs/compare.md ("The Java library row").
func init() {
	registerProgram(Info{
		Name:         "curator",
		Description:  "Apache Curator's InterProcessMutex (libcurator-recipes-java) over ZooKeeper: an ephemeral sequential znode held by Curator's session; lost on SUSPENDED/LOST, as its docs advise (clients/java/CuratorLock.java)",
		Servers:      "1 or 3 zookeeper (zookeeper: {members: 3})",
		Kinds:        []string{"zookeeper"},
		Lease:        true,
		Library:      &Library{Name: "Apache Curator", Module: "org.apache.curator:curator-recipes", Jar: CuratorJar, Debian: "libcurator-recipes-java", Language: "Java"},
		RenewsItself: true,
		Options:      func() Options { return &CuratorOptions{} },
	}, Program{Command: []string{"/bin/sh", "clients/java/curator_lock.sh"}, Prepare: prepareCurator})
	// The adapter is compiled at its first start: a JDK, not only the JRE
	// the ZooKeeper servers run on.
	clientPackages["curator"] = []string{"default-jdk-headless"}
}

// CuratorOptions are the curator row's settings (backend_options:
// {curator: {wait_ms: 1400}}), sent to its adapter as the open request's
// options, by the same keys.
type CuratorOptions struct {
	// WaitMS is how long, in milliseconds, each acquire waits in line for
	// the lock, as InterProcessMutex.acquire(maxWait, unit) does: its node
	// stays, watching the one before it, and is granted when that one
	// goes. Zero, the default, tries once (the client protocol's acquire).
	WaitMS int `yaml:"wait_ms"`
}

// Validate refuses a wait the answer could not come back within: the
// adapter answers info at 80% of the request's timeout, so a wait must
// stay within 70% of it (as the adapter bounds its other calls).
func (o *CuratorOptions) Validate(env Env) error {
	if o.WaitMS < 0 {
		return fmt.Errorf("wait_ms %d: 0 (try once) or more", o.WaitMS)
	}
	if limit := env.OpTimeout * 7 / 10; env.OpTimeout > 0 && time.Duration(o.WaitMS)*time.Millisecond > limit {
		return fmt.Errorf("wait_ms %d: at most 70%% of the timeout (%s), so that the answer comes before the harness gives up on the request", o.WaitMS, limit)
	}
	return nil
}

// CuratorJar is the jar of Curator's recipes the curator row's adapter
// runs with (clients/java/curator_lock.sh): Debian's, whose manifest names
// the rest of Curator, ZooKeeper's client, guava and slf4j.
const CuratorJar = "/usr/share/java/curator-recipes.jar"

// jarVersions caches each Java library's version for the life of the
// program (a compare asks once per cell).
var jarVersions sync.Map

// jarVersion is the version of the Java library l names, read at run time
// from the jar its adapter loads (l.Jar): its Debian package's version
// (dpkg-query) when that package owns the jar, else the version the jar
// states (Maven's pom.properties for l.Module, else its manifest's
// Implementation-Version or Bundle-Version); "unknown" when there is no
// such jar or it says none.
func (l Library) jarVersion() string {
	if v, ok := jarVersions.Load(l.Jar); ok {
		return v.(string)
	}
	v := "unknown"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if l.Debian != "" {
		if owner, err := exec.CommandContext(ctx, "dpkg-query", "-S", l.Jar).Output(); err == nil &&
			strings.HasPrefix(string(owner), l.Debian+":") {
			if dv, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", l.Debian).Output(); err == nil && len(dv) > 0 {
				v = string(dv)
			}
		}
	}
	if v == "unknown" {
		if jv := jarStatedVersion(l.Jar, l.Module); jv != "" {
			v = jv
		}
	}
	jarVersions.Store(l.Jar, v)
	return v
}

// jarStatedVersion is the version the jar at path states: the version of
// the Maven pom.properties of module ("group:artifact"), else its
// manifest's Implementation-Version, else its Bundle-Version; "" when it
// cannot be read or says none.
func jarStatedVersion(path, module string) string {
	r, err := zip.OpenReader(path)
	if err != nil {
		return ""
	}
	defer r.Close()
	props := func(name, key string, sep string) string {
		f, err := r.Open(name)
		if err != nil {
			return ""
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, val, ok := strings.Cut(sc.Text(), sep)
			if ok && strings.TrimSpace(k) == key {
				return strings.TrimSpace(val)
			}
		}
		return ""
	}
	if g, a, ok := strings.Cut(module, ":"); ok {
		if v := props("META-INF/maven/"+g+"/"+a+"/pom.properties", "version", "="); v != "" {
			return v
		}
	}
	for _, k := range []string{"Implementation-Version", "Bundle-Version"} {
		if v := props("META-INF/MANIFEST.MF", k, ":"); v != "" {
			return v
		}
	}
	return ""
}

// curatorBuilt is set once the curator row's adapter was compiled (or
// found compiled) by this program: prepareCurator runs the build once.
var curatorBuilt struct {
	sync.Mutex
	done bool
}

// prepareCurator compiles the curator row's adapter before its clients
// start (clients/java/curator_lock.sh --build: once per source, into a
// cache), so that no client's open waits on javac. The shipped files are
// written to a directory of its own when the repository's are not found
// from here (clients.Resolve). A missing JDK or Curator is the script's
// own line, naming what make deps installs.
func prepareCurator(ctx context.Context) error {
	curatorBuilt.Lock()
	defer curatorBuilt.Unlock()
	if curatorBuilt.done {
		return nil
	}
	dir, err := os.MkdirTemp("", "locktorture-curator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, _ := ProgramOf("curator")
	cmd, err := clients.Resolve(p.Command, dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd[0], append(cmd[1:], "--build")...)
	c.Stdin = nil
	out, err := c.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = err.Error()
		}
		return errors.New(msg)
	}
	curatorBuilt.done = true
	return nil
}
