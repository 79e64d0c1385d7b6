package main

import (
	"strings"
	"testing"
)

// TestCompareExecServersAndClaims: --exec-servers and --exec-claim name a
// row --exec gives, once each, with a known kind (and count) and a known
// claim — anything else is one line and 254 before anything runs; a row's
// servers choose its families (PostgreSQL: kill-session, not failover;
// five Redis: no Sentinel failover, as for a Redlock), and the renew families are planned
// for every row (a program that announces no extend is then not run
// there, with the reason).
func TestCompareExecServersAndClaims(t *testing.T) {
	base := []string{"compare", "--backends", "redis-token", "--seeds", "1", "--plan", "--exec", "mine=/bin/true"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--exec-servers", "other=postgres"}, `no --exec row is named "other"`},
		{[]string{"--exec-servers", "mine=bogus"}, `"bogus": unknown kind of server`},
		{[]string{"--exec-servers", "mine=redis*0"}, "KIND*N with N from 1 to 9"},
		{[]string{"--exec-servers", "mine=postgres", "--exec-servers", "mine=redis"}, "row mine given twice"},
		{[]string{"--exec-servers", "mine"}, "want NAME=VALUE"},
		{[]string{"--exec-claim", "mine=safest"}, `claim "safest": want safe`},
		{[]string{"--exec-claim", "mine=like:no-such"}, "no built-in backend"},
		{[]string{"--exec-claim", "nobody=safe"}, `no --exec row is named "nobody"`},
	} {
		code, _, stderr := runCLI(t, append(append([]string{}, base...), tc.args...)...)
		if code != exitBadArgs || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 254 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	for _, tc := range []struct {
		servers  string
		has, not []string
	}{
		{"mine=postgres", []string{"kill-session / mine (seed 1)", "renew-partition / mine (seed 1)", "pause / mine (seed 1)"}, []string{"failover / mine (seed 1)"}},
		{"mine=redis*5", []string{"renew-delay / mine (seed 1)", "restart / mine (seed 1)"}, []string{"failover / mine (seed 1)"}},
		{"mine=redis", []string{"failover / mine (seed 1)"}, nil},
		{"mine=etcd", []string{"failover-leader / mine (seed 1)"}, nil},
	} {
		code, out, stderr := runCLI(t, append(append([]string{}, base...), "--exec-servers", tc.servers, "--exec-claim", "mine=safe")...)
		if code != exitValid {
			t.Fatalf("%s: exit %d: %s", tc.servers, code, stderr)
		}
		for _, w := range tc.has {
			if !strings.Contains(out, w) {
				t.Errorf("%s: plan lacks %q:\n%s", tc.servers, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(out, w) {
				t.Errorf("%s: plan has %q:\n%s", tc.servers, w, out)
			}
		}
	}
}

// TestProgramServers: run's and client-check's --exec-servers name one
// program's servers; compare's NAME=KINDS spelling is taken too.
func TestProgramServers(t *testing.T) {
	for in, want := range map[string]string{"postgres": "postgres", "mine=redis*5": "redis*5", "redis,etcd": "redis,etcd"} {
		if got := programServers(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
