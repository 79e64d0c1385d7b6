package nemesis

import (
	"strings"
	"testing"
)

// TestSessionsIdle: a session kill did nothing when it found no session,
// or only sessions gone already; one it ended is an act, whatever else it
// found.
func TestSessionsIdle(t *testing.T) {
	cases := []struct {
		name string
		val  map[string]any
		want string // in the reason ("" when it acted)
	}{
		{"none found", map[string]any{"clients": []int{0}, "sessions": []map[string]any{}}, "it found no session of client(s) [0] to end"},
		{"none found, any client", map[string]any{"sessions": []map[string]any{}}, "it found no session to end"},
		{"gone already", map[string]any{"sessions": []map[string]any{{"client": "p0", "killed": false}}}, "the 1 session(s) it found were gone already"},
		{"one killed", map[string]any{"sessions": []map[string]any{{"client": "p0", "killed": false}, {"client": "p0", "killed": true}}}, ""},
		{"terminated", map[string]any{"sessions": []map[string]any{{"client": "p0", "pid": int32(7), "terminated": true}}}, ""},
		{"closed", map[string]any{"sessions": []map[string]any{{"node": "/tooz/locks/k0/x", "closed": true}}}, ""},
		{"revoked", map[string]any{"sessions": []map[string]any{{"key": "k0", "revoked": true}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := killSession{}.Idle(tc.val)
			switch {
			case tc.want == "" && got != "":
				t.Errorf("it acted, but Idle says %q", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Idle %q, want it to say %q", got, tc.want)
			}
		})
	}
}
