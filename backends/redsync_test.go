package backends

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/go-redsync/redsync/v4"

	"github.com/locktorture/locktorture/history"
)

// TestRedsyncErrorMapping: redsync's errors become fail only when every
// node's part is certain, busy only when some node had the lock taken.
func TestRedsyncErrorMapping(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	join := func(errs ...error) error {
		var err error
		for _, e := range errs { // as redsync does: one node at a time
			err = errors.Join(err, e)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want history.Type
		busy bool
	}{
		{"taken on a quorum", &redsync.ErrTaken{Nodes: []int{0, 1, 2}}, history.Fail, true},
		{"taken and refused", join(&redsync.ErrNodeTaken{Node: 0}, &redsync.RedisError{Node: 1, Err: refused}, &redsync.ErrNodeTaken{Node: 2}), history.Fail, true},
		{"refused on a majority", join(&redsync.RedisError{Node: 0, Err: refused}, &redsync.RedisError{Node: 1, Err: refused}, &redsync.RedisError{Node: 2, Err: refused}), history.Fail, false},
		{"taken and timed out", join(&redsync.ErrNodeTaken{Node: 0}, &redsync.RedisError{Node: 1, Err: context.DeadlineExceeded}), history.Info, false},
		{"lost connection", join(&redsync.RedisError{Node: 3, Err: errors.New("read: connection reset by peer")}), history.Info, false},
		{"quorum too late", redsync.ErrFailed, history.Info, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := redsyncError("acquire", "k0", tc.err, ErrBusy)
			if got := Outcome(err); got != tc.want {
				t.Errorf("outcome %s, want %s (%v)", got, tc.want, err)
			}
			if errors.Is(err, ErrBusy) != tc.busy {
				t.Errorf("busy %v, want %v (%v)", !tc.busy, tc.busy, err)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the library's error is not wrapped: %v", err)
			}
		})
	}
}
