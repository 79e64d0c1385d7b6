package secret

import (
	"reflect"
	"testing"
)

// TestRedactDSN: the password of every form a server's address takes is
// masked, and only the password; DSNPasswords finds it (and its
// unescaped form).
func TestRedactDSN(t *testing.T) {
	tests := []struct {
		name, in, want string
		pws            []string
	}{
		{"URL user info", "postgres://u:pw-1@db:5432/app", "postgres://u:X@db:5432/app", []string{"pw-1"}},
		{"URL without a host", "postgres://u:pw-1@/app", "postgres://u:X@/app", []string{"pw-1"}},
		{"URL, password only", "redis://:pw-1@db:6379", "redis://:X@db:6379", []string{"pw-1"}},
		{"URL, escaped password", "postgres://u:p%40w@db/app", "postgres://u:X@db/app", []string{"p%40w", "p@w"}},
		{"URL, a '/' and '@' in the password", "postgres://u:p/w@x@db/app", "postgres://u:X@db/app", []string{"p/w@x"}},
		{"URL, a '#' in the password", "mysql://u:p#w@db/app", "mysql://u:X@db/app", []string{"p#w"}},
		{"URL query", "postgres://u@db:5432/app?sslmode=disable&password=pw-1&x=1", "postgres://u@db:5432/app?sslmode=disable&password=X&x=1", []string{"pw-1"}},
		{"URL query and user info", "postgres://u:pw-1@db/app?sslpassword=pw-2#frag", "postgres://u:X@db/app?sslpassword=X#frag", []string{"pw-1", "pw-2"}},
		{"URL, a '@' in the query only", "postgres://u@db/app?application_name=a@b", "postgres://u@db/app?application_name=a@b", nil},
		{"URL, a user only", "postgres://u@db:5432/app", "postgres://u@db:5432/app", nil},
		{"URL, an empty password", "postgres://u:@db/app", "postgres://u:@db/app", nil},
		{"key=value", "host=db port=5432 user=u password=pw-1 dbname=app", "host=db port=5432 user=u password=X dbname=app", []string{"pw-1"}},
		{"key=value, quoted", `host=db password = 'p w\'1' dbname=app`, `host=db password = 'X' dbname=app`, []string{`p w\'1`, `p w'1`}},
		{"key=value, unclosed quote", `password='pw-1`, `password='X`, []string{"pw-1"}},
		{"MySQL form", "u:pw-1@tcp(db:3306)/app?tls=true", "u:X@tcp(db:3306)/app?tls=true", []string{"pw-1"}},
		{"host:port user info", "u:pw-1@db:6379", "u:X@db:6379", []string{"pw-1"}},
		{"host:port", "db:6379", "db:6379", nil},
		{"host:port, a password alone", "pw-1@db:6379", "X@db:6379", []string{"pw-1"}},
		{"MySQL form, a user only", "u@tcp(db:3306)/app", "u@tcp(db:3306)/app", nil},
		{"plain word", "mymaster", "mymaster", nil},
		{"empty", "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RedactDSN(tc.in, "X"); got != tc.want {
				t.Errorf("RedactDSN(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := DSNPasswords(tc.in); !reflect.DeepEqual(got, tc.pws) {
				t.Errorf("DSNPasswords(%q) = %q, want %q", tc.in, got, tc.pws)
			}
		})
	}
}
