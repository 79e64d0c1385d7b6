package backends

// redis-token is the single-instance lock the Redis docs recommend: SET key
// token NX PX ttl with a random token, released by a script that deletes the
// key only if it still holds that token. A holder can no longer delete
// someone else's lock, but a holder that pauses past its TTL still believes
// it holds the lock while another client does (Kleppmann's case). No fence.
func init() {
	Register(Info{
		Name:        "redis-token",
		Description: "SET NX PX with a random token, released by an atomic compare-and-delete script",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Lease:       true,
		Sentinel:    true,
		Options:     newRedisOptions,
	}, newSetNXBackend(redisKeys.release))
}
