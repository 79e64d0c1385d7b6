package secret

import (
	"bytes"
	"testing"
)

// TestRedact: every registered secret is masked, the longest first; a
// short value is not masked in text where it stands as no secret.
func TestRedact(t *testing.T) {
	Register("pw-abc")
	Register("pw-abcdef")
	Register("ab")
	tests := []struct{ in, want string }{
		{"AUTH lt pw-abc", "AUTH lt " + Mask},
		{"pw-abcdef and pw-abc", Mask + " and " + Mask},
		{"ab stays", "ab stays"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	var b bytes.Buffer
	n, err := Writer(&b).Write([]byte("line with pw-abc\n"))
	if err != nil || n != len("line with pw-abc\n") || b.String() != "line with "+Mask+"\n" {
		t.Errorf("Writer wrote %q (%d, %v)", b.String(), n, err)
	}
}

// TestWeakSecret: a password that is a common word (or short) is masked
// wherever it can stand as a secret — after AUTH, a password key, in a
// DSN's user info, in a line about credentials — and nowhere else: the
// word in other text ("latency p50", "run") survives.
func TestWeakSecret(t *testing.T) {
	Register("latency")
	Register("run")
	Register("Xk9-standing-pw") // strong: masked everywhere
	masked := []struct{ in, want string }{
		{"AUTH lt latency", "AUTH lt " + Mask},
		{"AUTH run", "AUTH " + Mask},
		{"postgres://app:latency@db:5432/app", "postgres://app:" + Mask + "@db:5432/app"},
		{"host=db user=app password=run dbname=x", "host=db user=app password=" + Mask + " dbname=x"},
		{"  password: latency", "  password: " + Mask},
		{`{"auth":{"redis":{"username":"lt","password":"latency"}}}`, `{"auth":{"redis":{"username":"lt","password":"` + Mask + `"}}}`},
		{"redis-server --requirepass run --port 1", "redis-server --requirepass " + Mask + " --port 1"},
		{"CONFIG SET masterauth latency", "CONFIG SET masterauth " + Mask},
		{"zookeeper digest lt:run", "zookeeper digest lt:" + Mask},
		{"CREATE USER 'lt'@'%' IDENTIFIED BY 'run';", "CREATE USER 'lt'@'%' IDENTIFIED BY '" + Mask + "';"},
		{"a p50 line\nAUTH lt latency\n", "a p50 line\nAUTH lt " + Mask + "\n"},
		{"Xk9-standing-pw in a plain line", Mask + " in a plain line"},
	}
	for _, tc := range masked {
		if got := Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, kept := range []string{
		"acquire latency p50 3ms p99 9ms",
		"run store/baseline/mutex/20260101T000000: 12 ops",
		"repeat:   locktorture run --scenario baseline --seed 1",
		"latencyrun, prerun, latency-ish",
	} {
		if got := Redact(kept); got != kept {
			t.Errorf("Redact(%q) = %q: a common word in other text was masked", kept, got)
		}
	}
}
