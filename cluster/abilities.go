package cluster

// What the core asks of a run's servers beyond Server, each through a small
// interface a kind's servers implement or not: their versions (Versioner)
// and ending client sessions (sessionKiller); and what it asks of a kind
// beyond its Kind's core, each through a small interface the kind's
// Abilities value implements or not (Checker, Preparer, Cleaner, ...).

import (
	"context"
	"fmt"
)

// ServerVersion asks a server for its version, as the server reports it
// (each kind's Versioner: Redis and Sentinel INFO server's redis_version,
// PostgreSQL's SHOW server_version, etcd's /version, ZooKeeper's srvr).
func (c *Cluster) ServerVersion(ctx context.Context, s Server) (string, error) {
	if v, ok := s.(Versioner); ok {
		return v.Version(ctx)
	}
	return "", fmt.Errorf("%s: no way to ask its version", s.Name())
}

// ServerVersions asks every server (and Sentinel) for its version, by
// name; a server that does not answer is left out.
func (c *Cluster) ServerVersions(ctx context.Context) map[string]string {
	all := append(c.Servers(), c.Companions()...)
	out := map[string]string{}
	for _, s := range all {
		if v, err := c.ServerVersion(ctx, s); err == nil {
			out[s.Name()] = v
		}
	}
	return out
}

// sessionKiller is a server (or a replicated group of them) that can end
// client sessions on its own, as an operator, a pooler or a timeout would.
// KillSessions ends the sessions of the clients named (process numbers),
// or, with none named, the sessions that hold a lock; it returns what it
// ended, for the nemesis op's value.
type sessionKiller interface {
	KillSessions(ctx context.Context, clients []int) ([]map[string]any, error)
}

// SessionKillers lists what can end the run's client sessions: every
// server that can (PostgreSQL, each Redis server, MariaDB), the etcd
// cluster (once, not per member: a revoked lease is gone from every
// member) and the ZooKeeper ensemble (once: a closed session is gone from
// every member).
func (c *Cluster) SessionKillers() []sessionKiller {
	var out []sessionKiller
	for _, s := range c.Servers() {
		if k, ok := s.(sessionKiller); ok {
			out = append(out, k)
		}
	}
	for _, g := range c.keptGroups() {
		if _, server := g.(Server); server {
			continue // listed among the servers already
		}
		if k, ok := g.(sessionKiller); ok {
			out = append(out, k)
		}
	}
	return out
}

// What a kind can do beyond starting its servers: each a small interface
// its Kind.Abilities value implements or not. A caller looks a kind up
// and asks with a type assertion (k.Abilities.(Checker)); a kind that
// lacks one is treated as the interface's comment says.

// Checker is a kind that can check a server of its kind someone else runs.
type Checker interface {
	// Check asks the server at e whether it answers and is what a run
	// needs (a Redis that is a primary), with the credentials the servers
	// file gives. Without it, that the server answers at all is found out
	// by the run.
	Check(ctx context.Context, e Endpoint) error
}

// Preparer is a kind that makes what a run needs on a server of its kind
// someone else runs.
type Preparer interface {
	// Prepare makes what a run of namespace needs on the server at e
	// (PostgreSQL: a schema of the run's own) and returns the address the
	// run uses instead (the DSN naming that schema). Without it: nothing
	// to make.
	Prepare(ctx context.Context, e Endpoint, namespace string) (string, error)
}

// Cleaner is a kind whose runs leave something on servers someone else
// runs.
type Cleaner interface {
	// Cleanup removes what the run of namespace left on servers of this
	// kind — and nothing else. Without it: a run leaves nothing there.
	Cleanup(ctx context.Context, servers []Endpoint, namespace string) error
}

// DSNAddressed is a kind whose server is named by one connection string
// (postgres://...) rather than by host:port: a servers file names one,
// and the client protocol gives one. Without it: host:port.
type DSNAddressed interface {
	// CheckDSN says what is wrong with a connection string a servers file
	// gives for this kind.
	CheckDSN(dsn string) error
}

// Credentialer is a kind whose clients take credentials in a form of
// their own.
type Credentialer interface {
	// Credentials turns the username, password and TLS files a servers
	// file gives for the server at addr (its address or DSN) into what
	// its clients take: the address they dial (PostgreSQL: a DSN holding
	// them) and the credentials left (ZooKeeper: a digest), or says why
	// they cannot be used. Without it: they are taken as given.
	Credentials(addr string, a *Auth) (string, *Auth, error)
}

// Composer is a kind whose servers run in the standing cluster that
// docker-compose.yml brings up (`locktorture compose` writes it).
// Without it: Program's command line, on a port of its own; no Program
// either: none.
type Composer interface {
	// Compose is how its servers run there.
	Compose() *ComposeSpec
}

// TLSStarter is a kind whose servers the harness can start with TLS from
// the run's CA (`security: tls`, --tls). Without it: it cannot, and a run
// that asks is refused before it starts.
type TLSStarter interface {
	// TLSModes are the modes (local, docker) in which it can.
	TLSModes() []string
}

// SessionEnder is a kind whose servers can end a client's session on
// their own (Cluster.SessionKillers): the kill-session fault applies to
// it.
type SessionEnder interface {
	// EndsSessions says its servers can.
	EndsSessions() bool
}

// LeaderElector is a kind whose servers form an ensemble that elects a
// leader (Cluster.Leader): a server fault may name the `leader`.
type LeaderElector interface {
	// ElectsLeader says its ensemble does.
	ElectsLeader() bool
}

// MembersUnlinked is a kind whose ensemble's members cannot each be cut
// off from the others through links of their own (topology: members).
type MembersUnlinked interface {
	// MembersUnlinked says why ("" when they can after all).
	MembersUnlinked() string
}

// CompanionNamer is a kind whose servers include other programs, by the
// names their servers go by (redis: "sentinel", its Sentinels; the
// group's Companioned says which they are): ServerKind takes sentinel-0
// for a server of this kind.
type CompanionNamer interface {
	// CompanionNames are those names.
	CompanionNames() []string
}

// Configurable is a kind that takes settings of its own: a scenario's
// block keyed by the kind's name (DecodeKindOptions), which its Start
// reads from StartOptions.Kinds. Without it: the kind takes none.
type Configurable interface {
	// Options returns the kind's fresh settings with their defaults.
	Options() KindOptions
}

// OlderSpelled is a kind whose settings were once top-level scenario
// keys.
type OlderSpelled interface {
	// OlderKeys are those keys, each mapped to the key of the kind's
	// block it stands for ("etcd_members": "members"): still read, and
	// refused beside the block's own key.
	OlderKeys() map[string]string
}

// SentinelGroup is the kind whose group a servers file names under
// sentinel: (redis, which alone implements it: cluster/kinds/redis).
type SentinelGroup interface {
	// CheckSentinel asks each of the group's Sentinels whether it knows
	// the master (monitored as master), and that master whether it takes
	// masterAuth; the first problem wraps ErrServerCheck.
	CheckSentinel(ctx context.Context, sentinels []Endpoint, master string, masterAuth *Auth) error
	// SentinelPrimary is the group's current primary (host:port) as the
	// first Sentinel that answers names it ("" when none does): a
	// Cleaner removes the run's data there too.
	SentinelPrimary(ctx context.Context, sentinels []Endpoint, master string) string
}

// RunView is what a kind's rules about the run as a whole see of it (a
// scenario's settings, as package scenarios gives them): a RunChecker's
// and a Refuser's.
type RunView struct {
	// Backend and Resource are the names of the run's backend and of its
	// resource ("" for none).
	Backend, Resource string
	// Kinds are the kinds of server the run uses: its backend's (or
	// exec.servers'), with those that join them (Joiner).
	Kinds []string
	// Start are its settings for the servers it starts (the kinds' own
	// blocks in Start.Kinds).
	Start StartOptions
	// Servers is where its servers run, as the scenario says (local,
	// docker, external; "" local), and Images the images it names.
	Servers string
	Images  map[string]string
	// RedisProgram is the program its Redis servers run (redis_program:
	// RedisPrograms).
	RedisProgram string
	// TLS says it asks for TLS (security: tls).
	TLS bool
	// BackendTables says its backend's clients use tables of the run's own
	// schema; BackendInTx that the backend's grant is a transaction the
	// resource acts inside (its backends.Info).
	BackendTables, BackendInTx bool
}

// RunChecker is a kind whose settings are checked against the rest of the
// run (a pooler needs the server it stands in front of), when a scenario
// is checked.
type RunChecker interface {
	// CheckRun says what is wrong with the run for this kind: a
	// *BlockError names the kind's block (and key) at fault.
	CheckRun(r RunView) error
}

// BlockError is what a RunChecker returns about a kind's block of a
// scenario.
type BlockError struct {
	// Kind is the kind whose block is at fault (not always the checker's
	// own: PgBouncer's rules are about the postgres block's via too).
	Kind string
	// Key is the block's key at fault, "" for the block itself.
	Key string
	// Msg says what is wrong.
	Msg string
}

func (e *BlockError) Error() string { return e.Msg }

// Joiner is a kind whose servers join a run of other kinds by those
// kinds' settings (PgBouncer: a run whose postgres block says via:
// pgbouncer).
type Joiner interface {
	// Joins says the run of kinds, with the kinds' settings, has this
	// kind's servers too.
	Joins(kinds []string, settings map[string]KindOptions) bool
}

// Refuser is a kind that refuses, before a run starts, a run its servers
// cannot serve where they run (Redis: Valkey where the host or the image
// has none).
type Refuser interface {
	// Refusal says in one line why, or "" when they can.
	Refusal(ctx context.Context, r RunView) string
}
