package local

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/locktorture/locktorture/cluster/provider"
)

// ErrMissingBinary is wrapped when a server's program is not on PATH
// (cluster.ErrMissingBinary).
var ErrMissingBinary = errors.New("server program not found")

func init() {
	provider.Register(provider.Local, func(_ context.Context, opt provider.Options) (provider.Provider, error) {
		return NewProvider(opt.TempDir), nil
	})
}

// Provider runs servers as processes of this machine on 127.0.0.1, with
// their directories under a cluster's temporary directory. Beyond
// provider.Provider it offers what only servers of the harness's own
// machine allow: ports that others can take first (PortsRace), and
// files a kind makes itself as the server's system user (RunAs,
// Template).
type Provider struct{ tmp string }

// NewProvider is the local provider of a cluster whose temporary
// directory is tmp.
func NewProvider(tmp string) Provider { return Provider{tmp: tmp} }

// Mode is "local".
func (Provider) Mode() string { return provider.Local }

// Host is 127.0.0.1 for every server.
func (Provider) Host(context.Context, string) (string, error) { return "127.0.0.1", nil }

// PortsRace: a free port of this machine can be taken before the server
// binds it.
func (Provider) PortsRace() bool { return true }

// Port is a free port of this machine, whatever the kind's usual one.
func (Provider) Port(int) (int, error) { return FreePort() }

// Dir is the named server's directory under the cluster's, emptied.
func (l Provider) Dir(name string) (string, error) {
	dir := filepath.Join(l.tmp, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("cluster: %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cluster: %s: %w", name, err)
	}
	return dir, nil
}

// HarnessHost is 127.0.0.1.
func (Provider) HarnessHost() string { return "127.0.0.1" }

// Program finds the program on this machine (LookBin).
func (Provider) Program(name, pkg string, extra ...string) (string, error) {
	return LookBin(name, pkg, extra...)
}

// Launch writes the spec's files and prepares its program. A spec that
// names a User and no Cred runs as that user when the harness is root:
// its directory (Dir) and files become the user's, the directory closed
// to others, and the directories above it traversable.
func (l Provider) Launch(_ context.Context, s provider.Spec) (provider.Unit, error) {
	as := RunAs{cred: s.Cred}
	if s.Cred == nil && s.User != "" {
		var err error
		if as, err = l.RunAs(s.User, "the server does not run as root", s.User); err != nil {
			return nil, err
		}
		if err := as.Reach(l.tmp, s.Dir); err != nil {
			return nil, err
		}
		if as.cred != nil {
			if err := os.Chmod(s.Dir, 0o700); err != nil {
				return nil, fmt.Errorf("cluster: %s: %w", s.Name, err)
			}
		}
	}
	for _, f := range s.Files {
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(f.Path, f.Content, mode); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", s.Name, err)
		}
		if s.Cred == nil {
			if err := as.Chown(f.Path); err != nil {
				return nil, err
			}
		}
	}
	bin, args := s.Program, s.Args
	if s.Shell != "" {
		// As in a container: $0 is sh, the program is $1.
		bin, args = "/bin/sh", append([]string{"-c", s.Shell, "sh", s.Program}, s.Args...)
	}
	return newProc(procConfig{Name: s.Name, Bin: bin, Args: args, Dir: s.Dir, LogPath: s.LogPath,
		Cred: as.cred, StopSig: s.StopSignal, Tree: s.Tree}), nil
}

// Images is none: local servers run from this machine's programs.
func (Provider) Images() map[string]string { return nil }

// Close has nothing to remove besides the units.
func (Provider) Close(context.Context) error { return nil }

// FreePort finds a free TCP port on 127.0.0.1 for a server to bind later.
// It picks below the kernel's ephemeral range (ip_local_port_range), where
// no outgoing connection takes a source port: a port from that range, freed
// here and bound by the server a few seconds later, can meanwhile become
// some connection's source port, and ZooKeeper exits when it cannot bind
// its election port. When the range leaves no room below, the kernel picks.
func FreePort() (int, error) {
	if lo := ephemeralLow(); lo > freePortFloor+1000 {
		for range 100 {
			p := freePortFloor + rand.IntN(lo-freePortFloor)
			if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
				_ = l.Close()
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("cluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePortFloor is the lowest port FreePort picks (above the well-known
// servers' ports).
const freePortFloor = 20000

// ephemeralLow is the first port of the kernel's ephemeral range (0 when
// it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}

// LookBin finds a program on PATH (or in extra directories), naming the
// Debian package that installs it when it is missing.
func LookBin(name, pkg string, extra ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range extra {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not on PATH; install the Debian package %s (make deps)", ErrMissingBinary, name, pkg)
}
