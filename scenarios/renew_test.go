package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktorture/locktorture/backends"
)

// TestRenewFamilies: renew-partition and renew-delay are compare columns
// that validate and run on exactly the rows that renew or keep a session
// (suits: renews — redis-renew, etcd, zookeeper and the library rows that
// renew themselves), naming every other row in not_run; each cut or delay
// outlasts the lease while the work outlasts it too.
func TestRenewFamilies(t *testing.T) {
	var renewing []string
	for _, info := range backends.List() {
		if info.Suits(nil, []string{"renews"}) {
			renewing = append(renewing, info.Name)
		}
	}
	for _, b := range []string{"redis-renew", "etcd", "zookeeper"} {
		if !slices.Contains(renewing, b) {
			t.Errorf("%s does not have the renews ability", b)
		}
	}
	for _, b := range []string{"redis-token", "redsync", "pg-advisory", "mutex"} {
		if slices.Contains(renewing, b) {
			t.Errorf("%s has the renews ability", b)
		}
	}
	for _, fam := range []string{"renew-partition", "renew-delay"} {
		if !slices.Contains(Families, fam) {
			t.Errorf("%s is not a family", fam)
		}
		s, err := Builtin(fam)
		if err != nil {
			t.Fatalf("%s: %v", fam, err)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", fam, err)
		}
		if got := s.AppliesTo(); !slices.Equal(got, renewing) {
			t.Errorf("%s runs %v, want the renewing rows %v", fam, got, renewing)
		}
		// Client 0's first acquire must have ended before client 1 asks:
		// a slow first grant otherwise let client 1 in first, and the
		// fault that waits for client 0's grant never came (unknown).
		if s.EntryWait.D() <= s.Timeout.D() {
			t.Errorf("%s: client 1 waits %s for client 0's first reply, not past the %s timeout", fam, s.EntryWait, s.Timeout)
		}
		if s.Hold.D() <= s.TTL.D() {
			t.Errorf("%s: the work (%s) must outlast the lease (%s)", fam, s.Hold, s.TTL)
		}
		var fault bool
		for _, st := range s.Nemesis.Script {
			if (st.Fault == "partition" || st.Fault == "latency") && st.On == "acquire" && strings.Contains(fmt.Sprint(st.Params), "process 0") {
				fault = true
			}
		}
		if !fault {
			t.Errorf("%s: no partition or latency of client 0 right after its grant", fam)
		}
	}
}

// TestEntryWait: entry_wait parses, reaches the effective scenario, and
// is refused below zero.
func TestEntryWait(t *testing.T) {
	s, err := Parse([]byte("name: x\nbackend: redis-token\nentry_wait: 1500ms\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if s.EntryWait.D() != 1500*time.Millisecond {
		t.Errorf("entry_wait %s, want 1.5s", s.EntryWait)
	}
	b, err := s.Marshal()
	if err != nil || !strings.Contains(string(b), "entry_wait: 1.5s") {
		t.Errorf("scenario.yaml has no entry_wait (%v):\n%s", err, b)
	}
	if _, err := Parse([]byte("name: x\nbackend: redis-token\nentry_wait: -1s\n"), "test"); err == nil || !strings.Contains(err.Error(), "-1s") {
		t.Errorf("entry_wait -1s: %v, want refused", err)
	}
}

// TestReleaseRetry: release_retry parses, and is refused for client
// processes (one request at a time) and below zero.
func TestReleaseRetry(t *testing.T) {
	s, err := Builtin("retry-release")
	if err != nil {
		t.Fatal(err)
	}
	if s.ReleaseRetry.D() <= 0 || s.ClientMode != ClientInproc {
		t.Fatalf("retry-release: release_retry %s, client_mode %q", s.ReleaseRetry, s.ClientMode)
	}
	for _, tc := range []struct{ extra, want string }{
		{"release_retry: 1s\n", "needs client_mode inproc"},
		{"release_retry: 1s\nclient_mode: process\n", "needs client_mode inproc"},
		{"release_retry: -1s\nclient_mode: inproc\n", "-1s"},
	} {
		_, err := Parse([]byte("name: x\nbackend: redis-token\n"+tc.extra), "test")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.extra, err, tc.want)
		}
	}
	if _, err := Parse([]byte("name: x\nbackend: redis-token\nrelease_retry: 1s\nclient_mode: inproc\n"), "test"); err != nil {
		t.Errorf("inproc: %v", err)
	}
}

// TestExpectEither: an expectation of either verdict parses with its why,
// reaches Expected with it, and is refused without one; a why beside any
// other verdict, and an unknown verdict, are refused.
func TestExpectEither(t *testing.T) {
	base := "name: x\nbackend: redis-token\nexpect:\n  valid: valid\n  backends:\n    redis-token: "
	s, err := Parse([]byte(base+"{valid: either, checkers: {mutex: invalid}, why: the claim leaves it open}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Expected("redis-token"); e.Valid != Either || e.Why != "the claim leaves it open" || e.Checkers["mutex"] != "invalid" {
		t.Errorf("Expected = %+v", e)
	}
	if e := s.Expected("redis-naive"); e.Valid != "valid" || e.Why != "" {
		t.Errorf("another backend's expectation = %+v", e)
	}
	for _, tc := range []struct{ entry, want string }{
		{"{valid: either}", "needs a why"},
		{"{valid: invalid, why: because}", "why is the reason for valid: either"},
		{"{valid: maybe}", "(or either)"},
	} {
		if _, err := Parse([]byte(base+tc.entry+"\n"), "test"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.entry, err, tc.want)
		}
	}
}
