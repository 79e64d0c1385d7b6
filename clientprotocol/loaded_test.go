package clientprotocol

import "time"

// libraryTimeout is the timeout_ms the tests of the shipped adapters (real
// libraries over real servers: Node, Python, Curator) give client-check.
// The rules ask a request with no fault on its way to be answered within
// it (a busy lock refused, a free one granted); on a loaded machine a
// library and its server take longer than client-check's default 300ms
// (seen at load 25 with two busy loops: node-pg's try-lock answered
// "timeout expired" after 373ms, tooz over kazoo gave up after 240ms),
// which says nothing of the adapter. The timeout is the window those rules
// test, so it cannot be waited out: it is made long enough instead.
const libraryTimeout = time.Second
