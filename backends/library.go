package backends

import (
	"context"
	"net"
	"runtime/debug"

	"github.com/locktorture/locktorture/clientsim"
)

// Library names the third-party library a backend drives through its
// public API (Info.Library): results.json's library field, with the
// version the running program was built with.
type Library struct {
	// Name is the package users import
	// ("github.com/redis/rueidis/rueidislock").
	Name string
	// Module is the Go module the package ships in, whose version Version
	// reads ("github.com/redis/rueidis").
	Module string
	// Language is the library's language ("Go").
	Language string
}

// Version is the library's module version as this program was built with
// it, read at run time from its build information (go.mod's pin, or the
// replacement's), never written by hand: "unknown" when the program
// carries no build information or does not link the module.
func (l Library) Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != l.Module {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace.Version
		}
		return d.Version
	}
	return "unknown"
}

// gatedConn is a library's connection held at its client's pause gate, for
// a client that runs in the harness's process (in a process of its own,
// SIGSTOP freezes the library whole). Nothing is written while the client
// is paused, and what is read during a pause (bytes, or a timeout) reaches
// the library only after it: a paused client's library neither renews nor
// hears. Its timers still run, though, which a stopped process's do not:
// see Info.RenewsItself.
type gatedConn struct {
	net.Conn
	gate *clientsim.Gate
	ctx  context.Context // ends with the client: nobody waits at the gate
}

// gateConn wraps conn in ce's pause gate, or returns it as it is when the
// client runs alone in a process (or has no gate). ctx ends the waits.
func gateConn(ctx context.Context, conn net.Conn, ce ClientEnv) net.Conn {
	if ce.WholeProcess || ce.Gate == nil {
		return conn
	}
	return &gatedConn{Conn: conn, gate: ce.Gate, ctx: ctx}
}

func (c *gatedConn) Read(b []byte) (int, error) {
	if err := c.gate.Wait(c.ctx); err != nil {
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Read(b)
	if werr := c.gate.Wait(c.ctx); werr != nil {
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *gatedConn) Write(b []byte) (int, error) {
	if err := c.gate.Wait(c.ctx); err != nil {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}
