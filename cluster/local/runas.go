package local

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RunAs is the system user a server runs as: the harness's own user, or
// the server's system user when the harness runs as root (PostgreSQL
// refuses root; MariaDB wants its own user).
type RunAs struct {
	cred     *syscall.Credential // nil: the harness's own user
	uid, gid int
	name     string // the user's name, for errors
}

// RunAs is the system user name when the harness runs as root (why says
// why the server does not run as root; pkg is the Debian package that
// creates the user), else the harness's own user.
func (Provider) RunAs(name, why, pkg string) (RunAs, error) {
	if os.Geteuid() != 0 {
		return RunAs{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return RunAs{}, fmt.Errorf("%w: %s and there is no `%s` user to run it as: install the Debian package %s (it creates the user), or run as another user: %w", ErrStart, why, name, pkg, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return RunAs{}, fmt.Errorf("%w: the %s user's ids %q:%q are not numbers", ErrStart, name, u.Uid, u.Gid)
	}
	return RunAs{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, uid: uid, gid: gid, name: name}, nil
}

// Cred is the user's credential for a process (nil: the harness's own).
func (a RunAs) Cred() *syscall.Credential { return a.cred }

// Chown gives path to the server's user (nothing to do without one).
func (a RunAs) Chown(path string) error {
	if a.cred == nil {
		return nil
	}
	if err := os.Lchown(path, a.uid, a.gid); err != nil {
		return fmt.Errorf("cluster: %s: %w", a.name, err)
	}
	return nil
}

// Reach lets the server's user reach dir: dir becomes its own, and every
// directory from top down to dir that others cannot traverse gets the
// traverse bit for others (not read: nobody can list them). Only
// directories at or below top (the cluster's temporary directory) or below
// the system's temporary directory are changed; any other directory in the
// way is an error naming it.
func (a RunAs) Reach(top, dir string) error {
	if a.cred == nil {
		return nil
	}
	if err := a.Chown(dir); err != nil {
		return err
	}
	sysTmp := filepath.Clean(os.TempDir())
	for d := filepath.Dir(filepath.Clean(dir)); ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("cluster: %s: %w", a.name, err)
		}
		if st.Mode().Perm()&0o001 == 0 {
			ours := d == top || strings.HasPrefix(d, top+string(filepath.Separator)) || strings.HasPrefix(d, sysTmp+string(filepath.Separator))
			if !ours {
				return fmt.Errorf("%w: the server runs as the %s user, which cannot traverse %s: use a temporary directory it can reach", ErrStart, a.name, d)
			}
			if err := os.Chmod(d, st.Mode().Perm()|0o001); err != nil {
				return fmt.Errorf("cluster: %s: %w", a.name, err)
			}
		}
		if d == "/" || d == sysTmp || d == filepath.Dir(d) {
			return nil
		}
	}
}

// Command prepares a program to run as the server's user, dying with the
// harness.
func (a RunAs) Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: a.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// Run runs cmd in dir with stdin, returning its output in the error when
// it fails (what, in words, names it).
func Run(cmd *exec.Cmd, dir, stdin, what string) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Dir = &out, &out, dir
	cmd.Stdin = strings.NewReader(stdin)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s: %s: %w\n%s", ErrStart, what, filepath.Base(cmd.Path), err, bytes.TrimSpace(out.Bytes()))
	}
	return nil
}

// TemplateMarker is written last into a finished template (Template).
const TemplateMarker = ".locktorture-template"

// CacheDir is where templates are kept between runs.
func CacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "locktorture")
}

// Template returns the directory kept between runs under key in CacheDir
// (one whose marker, TemplateMarker, says it is complete). The first run
// to need it builds it: build makes it under a fresh directory below
// scratch owned by as's user (as that user) and returns its path; it is
// copied into the cache, marked with note, and published with one rename,
// so processes racing to build it each publish a complete one or use the
// winner's.
func (Provider) Template(ctx context.Context, key, scratch, note string, as RunAs, build func(ctx context.Context, dir string) (string, error)) (string, error) {
	root := CacheDir()
	final := filepath.Join(root, key)
	if isFile(filepath.Join(final, TemplateMarker)) {
		return final, nil
	}
	dir, err := os.MkdirTemp(scratch, "initdb-")
	if err != nil {
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	defer os.RemoveAll(dir)
	if err := as.Chown(dir); err != nil {
		return "", err
	}
	made, err := build(ctx, dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	stage, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	defer os.RemoveAll(stage) // gone after a successful rename
	dst := filepath.Join(stage, "t")
	if err := CopyTree(made, dst, RunAs{}); err != nil {
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	if err := os.WriteFile(filepath.Join(dst, TemplateMarker), []byte(note+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	if err := os.Rename(dst, final); err != nil {
		if isFile(filepath.Join(final, TemplateMarker)) {
			return final, nil // another process published it first
		}
		if rerr := os.RemoveAll(final); rerr == nil { // a broken leftover
			if err = os.Rename(dst, final); err == nil {
				return final, nil
			}
		}
		return "", fmt.Errorf("cluster: template %s: %w", key, err)
	}
	return final, nil
}

// CopyTree copies the directory src to dst (which must not exist), keeping
// permissions and leaving out a template's marker, and gives every copy to
// as's user. File contents go through copy_file_range where the kernel
// offers it.
func CopyTree(src, dst string, as RunAs) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == TemplateMarker {
			return nil
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
			// Mkdir obeys the umask; the data directory must be 0700 or 0750.
			if err := os.Chmod(to, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return nil // sockets, pipes: nothing a data directory needs
		}
		return as.Chown(to)
	})
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// isFile reports whether p is a file (not a directory).
func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
