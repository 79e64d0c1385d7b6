package zookeeper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/local"
)

// A ZooKeeper JVM started on this machine maps a class data archive of
// ZooKeeper's own classes (Java's AppCDS, -XX:SharedArchiveFile), made
// once per machine and kept with the other templates (local.CacheDir):
// the classes a member loads to serve are then mapped, not parsed and
// verified again at every start. Measured on the 2-core machine at a load
// average of 15: 0.40 CPU-s to serving without it, 0.26 with it
// (docs/compare.md, "How long it takes"). What the member does once up is
// the same: the archive holds the same jars' classes, and the JVM checks
// it against the jars and itself (a stale one it ignores, -Xshare:auto).

// cdsArchiveName is the archive's file in its template directory.
const cdsArchiveName = "zookeeper.jsa"

// cdsBuildTimeout bounds the one start that makes the archive.
const cdsBuildTimeout = 2 * time.Minute

// cdsState remembers, for this process, each archive key's outcome: its
// path, or "" after a failed build (not tried again by this process).
var cdsState = struct {
	sync.Mutex
	done map[string]string
}{done: map[string]string{}}

// classArchive returns the JVM flag that maps the class archive for java
// bin and the classpath cp, making the archive first if this machine has
// none; nil when the servers do not run on this machine or the archive
// could not be made (the member then starts as before, without it).
func classArchive(ctx context.Context, c *cluster.Cluster, bin, cp string) []string {
	m, ok := c.Provider().(cluster.Machine)
	if !ok || c.Mode() != cluster.ServersLocal {
		return nil
	}
	key, err := cdsKey(bin, cp)
	if err != nil {
		return nil
	}
	cdsState.Lock()
	defer cdsState.Unlock()
	p, seen := cdsState.done[key]
	if !seen {
		scratch := filepath.Join(c.TempDir(), "zookeeper-cds")
		if err := os.MkdirAll(scratch, 0o700); err == nil {
			var dir string
			dir, err = m.Template(ctx, key, scratch, bin+" "+cp, local.RunAs{}, func(ctx context.Context, build string) (string, error) {
				return build, buildClassArchive(ctx, bin, cp, build)
			})
			if err == nil {
				p = filepath.Join(dir, cdsArchiveName)
			}
		}
		if ctx.Err() != nil {
			return nil // interrupted: try again another time
		}
		cdsState.done[key] = p
	}
	if p == "" {
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + p}
}

// cdsKey names the archive after what it depends on: the java binary, the
// jars (path, size, time) and the flags it is made with.
func cdsKey(bin, cp string) (string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("zookeeper: class archive: %w", err)
	}
	h := fnv.New64a()
	for _, f := range append([]string{real}, strings.Split(cp, ":")...) {
		fmt.Fprintf(h, "%s\x00", f)
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(h, "%d %d\x00", st.Size(), st.ModTime().UnixNano())
		}
	}
	fmt.Fprintf(h, "%q", zookeeperJVM)
	return fmt.Sprintf("zookeeper-cds-%016x-%s", h.Sum64(), cluster.TemplateFormat), nil
}

// buildClassArchive makes the archive in dir: a standalone ZooKeeper of
// its own, on a free loopback port, started with -XX:ArchiveClassesAtExit,
// asked `srvr` until it serves, then stopped with SIGTERM (the JVM writes
// the archive as it exits).
func buildClassArchive(ctx context.Context, bin, cp, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, cdsBuildTimeout)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("zookeeper: class archive: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("zookeeper: class archive: %w", err)
	}
	cfg := filepath.Join(dir, "zoo.cfg")
	conf := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n", data, port)
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("zookeeper: class archive: %w", err)
	}
	args := append(append([]string(nil), zookeeperJVM...), "-Djava.io.tmpdir="+dir,
		"-XX:ArchiveClassesAtExit="+filepath.Join(dir, cdsArchiveName), "-cp", cp, zookeeperMain, cfg)
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Dir = &out, &out, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("zookeeper: class archive: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for !serves(addr) {
		select {
		case err := <-exited:
			return fmt.Errorf("zookeeper: class archive: the JVM exited before serving: %v: %s", err, lastLine(out.String()))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("zookeeper: class archive: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("zookeeper: class archive: %w", ctx.Err())
	}
	_ = os.RemoveAll(data)
	if st, err := os.Stat(filepath.Join(dir, cdsArchiveName)); err != nil || st.Size() == 0 {
		return fmt.Errorf("zookeeper: class archive: none written: %s", lastLine(out.String()))
	}
	return nil
}

// serves reports whether a ZooKeeper at addr answers `srvr` with its mode.
func serves(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return false
	}
	b, err := io.ReadAll(conn)
	if err != nil && !errors.Is(err, io.EOF) && len(b) == 0 {
		return false
	}
	return bytes.Contains(b, []byte("Mode:"))
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
