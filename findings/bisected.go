package findings

// bisected records, by finding id, the first library version at which the
// finding reproduces, as `locktorture bisect` found it (docs/findings.md
// has each table): the version, and how it was found.
var bisected = map[string][2]string{
	"etcd-22082":                  {"v3.5.0", "at or before: the first stable release of go.etcd.io/etcd/client/v3; locktorture bisect --versions v3.5.0..v3.5.35, 2 seeds a version, reproduced at each version tried and at v3.6.16 (docs/bisect.md)"},
	"redlock-clock-jump":          {"v4.12.1", "at or before: the oldest version the program builds with (v4.11.0 has no ErrLockAlreadyExpired); locktorture bisect --versions v4.11.0..v4.18.1, 2 seeds a version (docs/bisect.md)"},
	"redlock-restart":             {"v4.12.1", "at or before: the oldest version the program builds with (v4.11.0 has no ErrLockAlreadyExpired); locktorture bisect --versions v4.11.0..v4.18.1, 2 seeds a version (docs/bisect.md)"},
	"rueidislock-renew-partition": {"v1.0.59", "at or before: the oldest version the program builds with (up to v1.0.55 rueidis has no ClientOption.DialCtxFn); locktorture bisect --versions v1.0.19..v1.0.79, 2 seeds a version (docs/bisect.md)"},
	"rueidislock-renew-delay":     {"v1.0.59", "at or before: the oldest version the program builds with (up to v1.0.55 rueidis has no ClientOption.DialCtxFn); locktorture bisect --versions v1.0.19..v1.0.79, 2 seeds a version (docs/bisect.md)"},
	"rueidislock-failover":        {"v1.0.70", "v1.0.69 reproduced 0 of 8 runs, v1.0.70 3 of 3: the first release with rueidis#924 and #926 (every rueidislock script retryable); locktorture bisect --versions v1.0.19..v1.0.79, then v1.0.69..v1.0.70 --seeds 3 (docs/bisect.md)"},
	"rueidislock-restart":         {"v1.0.70", "v1.0.69 reproduced 0 of 5 runs, v1.0.70 3 of 3: the first release with rueidis#924 and #926 (every rueidislock script retryable); locktorture bisect --versions v1.0.60..v1.0.79, then v1.0.69..v1.0.70 --seeds 3 (docs/bisect.md)"},
	"zk-lock-renew-partition":     {"v1.0.2", "at or before: the first release of github.com/go-zookeeper/zk; locktorture bisect --versions v1.0.2..v1.0.4, 2 seeds a version (docs/bisect.md)"},
	"zk-lock-kill-session":        {"v1.0.2", "at or before: the first release of github.com/go-zookeeper/zk; locktorture bisect --versions v1.0.2..v1.0.4, 2 seeds a version (docs/bisect.md)"},
}

// FirstVersion returns the first version at which the finding reproduces
// and how that was found, or "", "" when it was not bisected.
func FirstVersion(id string) (version, how string) {
	b := bisected[id]
	return b[0], b[1]
}
