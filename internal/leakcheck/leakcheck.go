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
