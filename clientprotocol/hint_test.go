package clientprotocol

import (
	"strings"
	"testing"
)

// TestLoginHint: the words that send a user to the Credentials section,
// and to --tls for a gRPC call credential refused on plaintext.
func TestLoginHint(t *testing.T) {
	for _, c := range []struct{ err, want string }{
		{"NOAUTH Authentication required.", "#credentials"},
		{"WRONGPASS invalid username-password pair or user is disabled.", "#credentials"},
		{"etcdserver: user name is empty", "#credentials"},
		{"zk: not authenticated", "#credentials"},
		{`<_InactiveRpcError of RPC that terminated with: status = StatusCode.UNAVAILABLE details = "Established channel does not have a sufficient security level to transfer call credential."`, "--tls"},
		{"lock is busy", ""},
		{"i/o timeout", ""},
	} {
		got := LoginHint(c.err)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("LoginHint(%q) = %q, want it to say %q", c.err, got, c.want)
		}
	}
}
