package links

import (
	"context"
	"sync/atomic"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// loseOnceType is the toxic behind LoseOneReply.
const loseOnceType = "locktorture_lose_once"

// loseOnceToxic drops the first chunk any of its link's connections
// carries while it is in place, and closes that connection; every chunk
// after it, on any connection, passes. toxiproxy makes one instance per
// toxic added and shares it between the link's connections, so the flag
// is the link's.
type loseOnceToxic struct {
	lost atomic.Bool
}

// Pipe passes chunks on, but drops the first one and closes its connection.
func (t *loseOnceToxic) Pipe(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if t.lost.CompareAndSwap(false, true) {
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

func init() { toxics.Register(loseOnceType, new(loseOnceToxic)) }

// LoseOneReply arms the link to lose one reply: the first bytes the server
// sends on any of its connections are dropped and that connection closed;
// whatever it sends after that passes, on every connection. Unlike
// LoseReply it can stay in place a while: it catches the reply to the
// request the client sends next, and only that one.
func (l *Link) LoseOneReply(ctx context.Context) (string, error) {
	return l.add(Downstream, loseOnceType, map[string]any{})
}
