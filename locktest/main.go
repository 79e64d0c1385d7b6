package locktest

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Environment variables the suite reads.
const (
	// EnvServers is where servers run: local (the default: processes on
	// 127.0.0.1), docker, or the path of a servers file (servers someone
	// else runs; see the locktorture docs on servers files).
	EnvServers = "LOCKTEST_SERVERS"
	// EnvStore is where failing subtests' reports are kept (default: a
	// temporary directory, printed in the failure).
	EnvStore = "LOCKTEST_STORE"
	// EnvImages names docker servers' images: all=REF, or KIND=REF,...
	EnvImages = "LOCKTEST_IMAGES"
	// EnvSeed overrides every scenario's seed, as -locktest.seed does.
	EnvSeed = "LOCKTEST_SEED"
	// EnvSeeds is how many seeds each family of a comparison runs with
	// (Comparison.Seeds), as -locktest.seeds does.
	EnvSeeds = "LOCKTEST_SEEDS"
	// EnvKeep, set to anything but "" or 0, keeps the reports of passing
	// subtests too, as -locktest.keep does: each subtest logs its path.
	EnvKeep = "LOCKTEST_KEEP"
	// envChild marks a client process: it names the Run call it serves.
	envChild = "LOCKTEST_CHILD"
)

var (
	seedFlag    = flag.String("locktest.seed", "", "run every locktest scenario with this seed (as "+EnvSeed+")")
	keepFlag    = flag.Bool("locktest.keep", false, "keep the reports of passing locktest subtests too (as "+EnvKeep+"=1)")
	serversFlag = flag.String("locktest.servers", "", "where locktest's servers run: local, docker or a servers file (as "+EnvServers+")")
	seedsFlag   = flag.String("locktest.seeds", "", "seeds per family of every locktest comparison (as "+EnvSeeds+")")
	// -locktest.child marks a client process of a comparison (Compare),
	// as envChild does one of Run: a flag, so that the command line a
	// comparison's cell repeats with (locktorture run --exec) says it.
	_ = flag.String(childFlagName, "", "set by locktest on its client processes only: the call the process serves")
)

// childFlagName is the flag that marks a comparison's client process.
const childFlagName = "locktest.child"

// childID names the Run or Compare call a client process serves: its
// LOCKTEST_CHILD, or its -locktest.child flag (read from the command line
// itself, since Main looks before the flags are parsed); "" in the test
// process.
func childID() string {
	if id := os.Getenv(envChild); id != "" {
		return id
	}
	for _, a := range os.Args[1:] {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-") // -flag or --flag
		if id, ok := strings.CutPrefix(a, childFlagName+"="); ok {
			return id
		}
	}
	return ""
}

var (
	mainMu        sync.Mutex
	mainInstalled bool
	// protoOut is the client protocol's stdout in a client process (the
	// test binary's own output goes to stderr there).
	protoOut *os.File
	// calls counts Run calls per test (per run of it: go test -count=N
	// runs a test N times), so a client process finds its own.
	calls = map[*testing.T]int{}
)

// Main is the TestMain hook that lets the suite run the test binary itself
// as its client processes, the way testscript's RunMain does:
//
//	func TestMain(m *testing.M) { locktest.Main(m) }
//
// In the test process it runs the tests, then stops the servers the
// suite shared between them; in a client process it serves the client
// protocol with the lock of the test that started it. It does not return.
func Main(m *testing.M) {
	mainMu.Lock()
	mainInstalled = true
	mainMu.Unlock()
	if childID() != "" {
		// A client process: stdout carries the protocol, so everything
		// else the binary prints goes to stderr (client-N.log).
		protoOut = os.Stdout
		os.Stdout = os.Stderr
		unsetSharedPasswords() // the open request carries the credentials
		code := m.Run()
		mainMu.Lock()
		done, err := served, serveErr
		mainMu.Unlock()
		if done {
			// Served, and the test's cleanups ran (serveChild).
			if err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "locktest: the client process's test ended without serving %s (exit %d): does the test call locktest.Run (and Compare) in the same way every time?\n", childID(), code)
		os.Exit(3)
	}
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "locktest: stopping the shared servers: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	removeTempStore()
	os.Exit(code)
}

// unsetSharedPasswords removes the shared servers' passwords, inherited
// from the test process, from a client process's environment.
func unsetSharedPasswords() {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, envSharedPassword) {
			_ = os.Unsetenv(k)
		}
	}
}

// installed reports whether Main runs.
func installed() bool {
	mainMu.Lock()
	defer mainMu.Unlock()
	return mainInstalled
}

// callID names one Run call: the test's name and how many Run calls that
// test made before.
func callID(t *testing.T) string {
	mainMu.Lock()
	defer mainMu.Unlock()
	n := calls[t]
	calls[t] = n + 1
	return t.Name() + "#" + strconv.Itoa(n)
}

// runPattern is the -test.run pattern that selects exactly the test
// named (subtests too).
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// seedOverride is the seed -locktest.seed or LOCKTEST_SEED sets.
func seedOverride() (int64, bool, error) {
	s := *seedFlag
	if s == "" {
		s = os.Getenv(EnvSeed)
	}
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("locktest: seed %q is not an integer", s)
	}
	return n, true, nil
}

// keepPassing reports whether passing subtests' reports are kept.
func keepPassing() bool {
	v := os.Getenv(EnvKeep)
	return *keepFlag || (v != "" && v != "0")
}

// serversSetting is where servers run: local, docker or a servers file.
func serversSetting(s Suite) string {
	switch {
	case *serversFlag != "":
		return *serversFlag
	case os.Getenv(EnvServers) != "":
		return os.Getenv(EnvServers)
	case s.Servers != "":
		return s.Servers
	}
	return "local"
}
