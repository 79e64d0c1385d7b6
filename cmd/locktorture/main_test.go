package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/testenv"

	"github.com/locktorture/locktorture/internal/leakcheck"
)

var binPath string

// TestMain builds the real binary once, for the tests that signal it.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "locktorture-cli-")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "locktorture")
	if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireRedis(t *testing.T) {
	t.Helper()
	testenv.Require(t, "redis-server")
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadInputExits254(t *testing.T) {
	bad := writeFile(t, "bad.yaml", "name: x\nbackend: redis-token\nttl: 1s\nbogus: 3\n")
	badDur := writeFile(t, "dur.yaml", "name: x\nbackend: redis-token\nttl: soon\n")
	store := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string // in the one-line error
	}{
		{"no command", nil, "Usage:\n"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"no scenario", []string{"run"}, "--scenario"},
		{"unknown scenario", []string{"run", "--scenario", "nope", "--store", store}, `unknown scenario "nope"`},
		{"unknown backend", []string{"run", "--scenario", "baseline", "--backend", "no-such-lock", "--store", store}, `unknown backend "no-such-lock"`},
		{"bad fencing", []string{"run", "--scenario", "baseline", "--fencing", "some", "--store", store}, "--fencing"},
		{"bad clients", []string{"run", "--scenario", "baseline", "--clients", "0", "--store", store}, "--clients"},
		{"unknown field", []string{"run", "--scenario-file", bad, "--store", store}, bad + ":4:"},
		{"bad duration", []string{"run", "--scenario-file", badDur, "--store", store}, badDur + ":3:"},
		{"missing file", []string{"run", "--scenario-file", "/nonexistent.yaml", "--store", store}, "nonexistent.yaml"},
		{"bad flag", []string{"run", "--frobs"}, "frobs"},
		{"analyze nothing", []string{"analyze", t.TempDir()}, "no history.jsonl"},
		{"unknown list", []string{"list", "things"}, "unknown list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 254 {
				t.Errorf("exit %d, want 254 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not say %q", stderr, tc.want)
			}
			if tc.name != "no command" && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("want one line, got %q", stderr)
			}
		})
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Errorf("bad input wrote to the store: %v", ents)
	}
}

func TestHelpAndList(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"analyze", "--help"}, {"list", "--help"}} {
		if code, _, _ := runCLI(t, args...); code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	code, out, _ := runCLI(t, "list", "backends")
	for _, b := range []string{"mutex", "redis-naive", "redis-token", "redis-fenced"} {
		if code != 0 || !strings.Contains(out, b) {
			t.Errorf("list backends (exit %d) lacks %s:\n%s", code, b, out)
		}
	}
	_, out, _ = runCLI(t, "list", "scenarios")
	for _, s := range []string{"baseline", "kleppmann-pause", "kleppmann-fenced"} {
		if !strings.Contains(out, s) {
			t.Errorf("list scenarios lacks %s:\n%s", s, out)
		}
	}
	if _, out, _ = runCLI(t, "list", "nemeses"); !strings.Contains(out, "pause") {
		t.Errorf("list nemeses lacks pause:\n%s", out)
	}
}

// TestListPackages: scripts/images.sh and scripts/deps.sh install what
// `list packages` says, so it lists every kind's packages, each once, with
// whether a suite must have it.
func TestListPackages(t *testing.T) {
	code, out, _ := runCLI(t, "list", "packages")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("line %q: want PACKAGE KIND NEED", line)
		}
		got[f[0]+" "+f[1]] = f[2]
	}
	for _, k := range cluster.Kinds() {
		for need, pkgs := range map[string][]string{"required": k.Packages, "optional": k.OptionalPackages} {
			for _, p := range pkgs {
				if got[p+" "+k.Name] != need {
					t.Errorf("%s (%s): %q, want %s", p, k.Name, got[p+" "+k.Name], need)
				}
			}
		}
	}
	if got["redis-server redis"] != "required" {
		t.Errorf("redis-server is not a required package of redis:\n%s", out)
	}
}

func TestMissingServerExits255(t *testing.T) {
	store := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	code, _, stderr := runCLI(t, "run", "--scenario", "baseline", "--store", store, "--quiet")
	if code != 255 {
		t.Errorf("exit %d, want 255", code)
	}
	if !strings.Contains(stderr, "redis-server") || !strings.Contains(stderr, "Debian package") {
		t.Errorf("stderr should name the program and its package: %q", stderr)
	}
	if ents, _ := os.ReadDir(store); len(ents) > 0 {
		if runs, _ := filepath.Glob(filepath.Join(store, "*", "*", "*")); len(runs) > 0 {
			t.Errorf("half-written store: %v", runs)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	requireRedis(t)
	store := t.TempDir()
	code, out, stderr := runCLI(t, "run", "--scenario", "kleppmann-pause", "--store", store, "--quiet")
	if code != 1 {
		t.Fatalf("kleppmann-pause exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"INVALID", "stale holder", "store:", "as expected", "--seed 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "analyze", filepath.Join(store, "latest"))
	if code != 1 || !strings.Contains(out, "INVALID") {
		t.Errorf("analyze exit %d, want 1:\n%s", code, out)
	}
	code, out, stderr = runCLI(t, "run", "--scenario", "baseline", "--duration", "1s", "--store", store, "--quiet")
	if code != 0 {
		t.Errorf("baseline exit %d, want 0\n%s\n%s", code, out, stderr)
	}
}

// TestSignalLeavesNothing sends SIGINT (polite) and SIGKILL (the harness
// dies at once) to a real locktorture mid-run: no server may outlive it.
func TestSignalLeavesNothing(t *testing.T) {
	requireRedis(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			tmp, store := t.TempDir(), t.TempDir()
			cmd := exec.Command(binPath, "run", "--scenario", "baseline", "--duration", "1m", "--store", store)
			cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the clients run (a history is being written).
			for i := 0; ; i++ {
				h, _ := filepath.Glob(filepath.Join(store, "baseline", "*", "*", "history.jsonl"))
				if len(h) > 0 && len(leakcheck.ProcessesUnder(tmp)) > 0 {
					if st, err := os.Stat(h[0]); err == nil && st.Size() > 0 {
						break
					}
				}
				if i > 3000 {
					cmd.Process.Kill()
					t.Fatalf("the run never started: %s", stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if sig != syscall.SIGKILL {
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 255 {
					t.Errorf("exit %v after %v, want 255; stderr: %s", err, sig, stderr.String())
				}
				if !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("stderr does not say the run was interrupted: %s", stderr.String())
				}
			}
			// After SIGKILL the servers die with their parent (a death
			// signal); give the kernel a moment to deliver it.
			var left []string
			for i := 0; i < 500; i++ {
				if left = leakcheck.ProcessesUnder(tmp); len(left) == 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Errorf("servers outlived locktorture after %v: %v", sig, left)
			}
			if sig != syscall.SIGKILL {
				if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
					t.Errorf("temporary files left after %v: %v", sig, ents)
				}
			}
		})
	}
}
