package clientprotocol

import "strings"

// CredentialsDoc is where the client protocol says how a client logs in.
const CredentialsDoc = "docs/client-protocol.md#credentials"

// LoginHint says where to look when an error a client got says it did
// not prove who it is (Redis's NOAUTH, etcd's empty user name, gRPC
// refusing a token on plaintext, ...); "" for any other error.
func LoginHint(err string) string {
	e := strings.ToLower(err)
	switch {
	case strings.Contains(e, "security level") && strings.Contains(e, "credential"):
		// python-etcd3 (any gRPC client) sends its token as a call
		// credential, which gRPC refuses over plaintext.
		return "gRPC sends a token (a call credential) only over TLS: run with --tls (security: tls), and dial etcd with the auth.etcd.tls files; see " + CredentialsDoc
	case containsAny(e, "noauth", "wrongpass", "authentication", "not authenticated", "invalid username", "invalid password",
		"user name is empty", "invalid auth token", "etcdserver: permission denied", "access denied", "auth failed", "unauthorized"):
		return "the servers ask for credentials: connect with the open request's auth (see " + CredentialsDoc + ")"
	}
	return ""
}

// containsAny reports whether s contains any of subs.
func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
