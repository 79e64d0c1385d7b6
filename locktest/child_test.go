package locktest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeLock answers from a script: what Acquire and Release return by key.
type fakeLock struct {
	cfg     Config
	grants  map[string]Grant
	errs    map[string]error
	release map[string]error
	closed  bool
}

func (f *fakeLock) Acquire(ctx context.Context, key string) (Grant, error) {
	if key == "renewed" {
		f.cfg.Extended(key, 900*time.Millisecond, nil)
		f.cfg.Extended(key, 0, ErrNotHeld)
		f.cfg.Lost(key)
	}
	return f.grants[key], f.errs[key]
}
func (f *fakeLock) Release(ctx context.Context, key string) error { return f.release[key] }
func (f *fakeLock) Close() error                                  { f.closed = true; return nil }

// TestServe speaks the client protocol to a lock: each answer and event
// as docs/client-protocol.md has them.
func TestServe(t *testing.T) {
	lock := &fakeLock{
		grants:  map[string]Grant{"k0": {Lease: 990 * time.Millisecond, Fence: 34, Fenced: true}, "late": {Lease: -5 * time.Millisecond}, "zero": {Fence: 0, Fenced: true}},
		errs:    map[string]error{"busy": ErrBusy, "lost": errors.New("i/o timeout")},
		release: map[string]error{"gone": ErrNotHeld, "slow": context.DeadlineExceeded},
	}
	var got Config
	in := strings.Join([]string{
		`{"id":0,"op":"open","process":3,"ttl_ms":1000,"timeout_ms":500,"servers":{"redis":["127.0.0.1:1"],"sentinel":{"master":"m","addrs":["127.0.0.1:2"]}},"auth":{"redis":{"username":"lt","password":"pw","tls":{"ca":"/ca.pem"}},"etcd":[{"username":"a"},{"username":"b"}]},"options":{}}`,
		`{"op":"clock","offset_ns":5}`,
		`{"id":1,"op":"acquire","key":"k0"}`,
		`{"id":2,"op":"acquire","key":"busy"}`,
		`{"id":3,"op":"acquire","key":"lost"}`,
		`{"id":4,"op":"acquire","key":"late"}`,
		`{"id":5,"op":"acquire","key":"zero"}`,
		`{"id":6,"op":"release","key":"k0"}`,
		`{"id":7,"op":"release","key":"gone"}`,
		`{"id":8,"op":"release","key":"slow"}`,
		`{"id":9,"op":"acquire","key":"renewed"}`,
		`{"id":10,"op":"frobnicate"}`,
		`{"id":11,"op":"close"}`,
		`{"id":12,"op":"acquire","key":"after"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	err := serve(context.Background(), strings.NewReader(in), &out, func(ctx context.Context, cfg Config) (Lock, error) {
		got, lock.cfg = cfg, cfg
		return lock, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"id":0,"type":"ok"}`,
		`{"id":1,"type":"ok","lease_ms":990,"fence":34}`,
		`{"id":2,"type":"fail","error":"busy"}`,
		`{"id":3,"type":"info","error":"i/o timeout"}`,
		`{"id":4,"type":"ok","lease_ms":0}`,
		`{"id":5,"type":"ok","fence":0}`,
		`{"id":6,"type":"ok"}`,
		`{"id":7,"type":"fail","error":"not held"}`,
		`{"id":8,"type":"info","error":"context deadline exceeded"}`,
		`{"event":"extend","key":"renewed","phase":"invoke"}`,
		`{"type":"ok","lease_ms":900,"event":"extend","key":"renewed"}`,
		`{"event":"extend","key":"renewed","phase":"invoke"}`,
		`{"type":"fail","error":"not held","event":"extend","key":"renewed"}`,
		`{"id":9,"type":"ok"}`,
		`{"event":"lost","key":"renewed"}`, // called inside Acquire: sent after its grant
		`{"id":10,"type":"fail","error":"unknown op \"frobnicate\""}`,
		`{"id":11,"type":"ok"}`,
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i := range max(len(lines), len(want)) {
		var g, w string
		if i < len(lines) {
			g = lines[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d: got %s, want %s", i, g, w)
		}
	}
	if !lock.closed {
		t.Error("close did not close the lock")
	}
	if got.Process != 3 || got.TTL != time.Second || got.Timeout != 500*time.Millisecond || got.Servers.Redis[0] != "127.0.0.1:1" ||
		got.Servers.Sentinel == nil || got.Servers.Sentinel.Master != "m" {
		t.Errorf("config %+v", got)
	}
	if a := got.Auth["redis"]; len(a) != 1 || a[0].Password != "pw" || a[0].TLS == nil || a[0].TLS.CA != "/ca.pem" {
		t.Errorf("auth.redis %+v", a)
	}
	if a := got.Auth["etcd"]; len(a) != 2 || a[1].Username != "b" {
		t.Errorf("auth.etcd (one per address) %+v", a)
	}
}
