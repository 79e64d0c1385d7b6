// Package leakcheck finds server processes a test's run may have left
// behind: every server the harness starts runs in a data directory under
// the run's temporary directory, so a process whose working directory (or
// command line) lies under that directory is one of them.
package leakcheck

import (
	"os"
	"path/filepath"
	"strings"
)

// ProcessesUnder lists "pid: command" for every process, other than this
// one, whose working directory or command line lies under dir. Servers
// rewrite their command lines (redis-server does), but keep their working
// directory.
func ProcessesUnder(dir string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []string
	for _, e := range ents {
		name := e.Name()
		if name == "" || name[0] < '0' || name[0] > '9' || name == itoa(self) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", name, "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
		cwd, _ := os.Readlink(filepath.Join("/proc", name, "cwd"))
		if strings.HasPrefix(cwd, dir) || strings.Contains(cmd, dir) {
			out = append(out, name+": "+cmd)
		}
	}
	return out
}

// TempDirsLeft lists the cluster temporary directories left in dir.
func TempDirsLeft(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "locktorture-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// StoppedUnder lists the processes under dir (as ProcessesUnder) that are
// stopped (state T): a server paused with SIGSTOP and never resumed.
func StoppedUnder(dir string) []string {
	var out []string
	for _, p := range ProcessesUnder(dir) {
		pid, _, _ := strings.Cut(p, ":")
		b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
		if err != nil {
			continue
		}
		// The state follows the command name in parentheses.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't') {
			out = append(out, p)
		}
	}
	return out
}

// Listeners returns the TCP ports process pid listens on (IPv4 and IPv6).
func Listeners(pid int) []int {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(filepath.Join("/proc", itoa(pid), "fd"))
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc", itoa(pid), "fd", fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fs[1], ":")
			port := 0
			for _, c := range hexPort {
				port = port*16 + hexVal(c)
			}
			ports = append(ports, port)
		}
	}
	return ports
}

func hexVal(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return 0
}
