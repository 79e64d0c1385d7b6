package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/internal/yamlkeys"
)

// Kind is one kind of server: the core every kind has — its name, the
// packages and image its programs come from, about how long one takes to
// start, and how the harness starts its servers (as a local process or in
// a container alike: a kind asks its Provider for a host, a port, a
// directory and its program, never which mode runs). Each kind registers
// its Kind from its init (RegisterKind): a package of its own under
// cluster/kinds, linked by cluster/kinds/all; everything that lists kinds
// — servers files, images, the exec backend, the external clean-up —
// reads the registry.
//
// What a kind can do beyond that (check a server someone else runs,
// prepare and clean a run's namespace there, take settings, end
// sessions, ...) is said by the small interfaces its Abilities value
// implements (Checker, Preparer, Cleaner, Configurable, ...: abilities.go),
// as what its servers can do is said by Versioner, Pauser, Killer and
// ClientAddresser: callers ask with a type assertion, never by its name.
// TestKindIsACore keeps this struct to its core.
type Kind struct {
	// Name is what users type: a servers file's key, `--image KIND=REF`,
	// exec.servers, and the key of the client protocol's servers.
	Name string
	// Packages are the Debian packages its programs come from (make deps
	// and make images install them; `locktorture list packages` lists
	// them for the scripts).
	Packages []string
	// OptionalPackages are Debian packages of a choice some suites lack
	// (valkey-server before trixie): make images installs each where the
	// suite has it, make deps where apt offers it; a run that needs one
	// that is missing is refused with the reason.
	OptionalPackages []string
	// Image is the image its servers run from in docker mode when the run
	// names none: the official one, as a user with a registry gets it.
	Image string
	// StartupCost is about how long a server of this kind takes to start
	// on a busy 2-core machine, for scheduling only (a matrix runs its
	// longest cells first, and starts a lane's next servers ahead when
	// they are slow enough). Zero: next to nothing.
	StartupCost time.Duration
	// Start starts the servers of this kind a run needs when no backend
	// of its own starts them (the exec backend's exec.servers: each entry
	// one more server, or the one ensemble). Nil for a kind that is one
	// program: Program is started (startProgram).
	Start func(ctx context.Context, c *Cluster, o StartOptions) error
	// Program is a kind that is one program on one port: all it needs to
	// be started in every mode and served in the standing cluster
	// (its Kind defaults to Name).
	Program *ProgramSpec
	// Abilities is the kind's own value (its package's type), which says
	// what else the kind can do by the interfaces of abilities.go it
	// implements. Nil: nothing beyond starting its servers.
	Abilities any
}

// DefaultKind is the kind of server started where none is named
// (exec.servers, client-check --servers, a locktest Suite's Kinds): one
// redis-server.
const DefaultKind = redisKind

// redisKind is the Redis kind's name (cluster/kinds/redis): a servers
// file's Sentinel group (SentinelKind) belongs to it.
const redisKind = "redis"

// StartOptions are a run's settings for the servers it starts.
type StartOptions struct {
	// Persistence asks Redis servers to keep their keys across a kill.
	Persistence bool
	// Sentinel makes the Redis a Sentinel group (a primary, a replica,
	// three Sentinels) rather than one server.
	Sentinel bool
	// Clients is the number of the run's client processes (a pooler in
	// front of a server sizes its pool from it).
	Clients int
	// Kinds are the kinds' own settings, by kind name (a scenario's
	// `etcd: {members: 3}`), each of the type its Configurable.Options returns;
	// a kind's Start reads its own (OptionsOf). None: its defaults. Not
	// JSON: each kind's settings decode only into their own type.
	Kinds map[string]KindOptions `json:"-"`
}

// KindOptions are a kind's own settings: a scenario's block keyed by the
// kind's name (`zookeeper: {members: 3}`), decoded strictly by
// DecodeKindOptions into the fresh value its Configurable.Options returns (a
// pointer to a struct whose yaml tags are the keys the block takes).
type KindOptions interface {
	// Check says what is wrong with the settings themselves (a
	// *KeyError names the key at fault), nil when nothing is.
	Check() error
}

// EnsembleOptions are the settings of a kind whose servers form an
// ensemble of a size the run chooses.
type EnsembleOptions interface {
	KindOptions
	// Size is the number of members asked for (0: the default, one).
	Size() int
}

// Ensemble is the setting of a kind whose servers form an ensemble of the
// size a run chooses: its block's members key (`etcd: {members: 3}`).
// The kind's options embed it, inline (etcd's and ZooKeeper's), and
// check it with CheckMembers; it gives them EnsembleOptions' Size.
type Ensemble struct {
	// Members is the number of members. Zero means "the ensemble already
	// running", or 1 when none is; a scenario's block gives 1 when it
	// leaves it out.
	Members int `yaml:"members"`
}

// Size is the number of members asked for.
func (e *Ensemble) Size() int { return e.Members }

// CheckMembers refuses a number of members ok does not take, saying which
// it takes (allowed: "from 1 to 7", "1 or 3").
func (e *Ensemble) CheckMembers(allowed string, ok func(n int) bool) error {
	switch {
	case e.Members == 0:
		return &KeyError{Key: "members", Msg: "members must be " + allowed + ", not 0 (leave it out for 1)"}
	case !ok(e.Members):
		return &KeyError{Key: "members", Msg: fmt.Sprintf("members must be %s, not %d", allowed, e.Members)}
	}
	return nil
}

// KeyError is what a kind's settings' Check (KindOptions) returns about
// one key of its block.
type KeyError struct {
	// Key is the block's key at fault ("members").
	Key string
	// Msg says what is wrong, naming the key ("members must be 1 or 3, not 2").
	Msg string
}

func (e *KeyError) Error() string { return e.Msg }

// OptionsOf is kind's settings in o, of the type T its Configurable.Options
// makes (a *T), or T's zero value when o has none.
func OptionsOf[T any](o StartOptions, kind string) T {
	if v, ok := any(o.Kinds[kind]).(*T); ok && v != nil {
		return *v
	}
	var zero T
	return zero
}

// DecodeKindOptions decodes a scenario's block for kind (nil or null: the
// kind's defaults) into the kind's fresh options, strictly: a key the kind
// does not take is refused, naming the keys it does take. Nil for a kind
// that takes none, whose block may only be empty. Errors begin
// "line N: ", as yaml's own do.
func DecodeKindOptions(kind string, n *yaml.Node) (KindOptions, error) {
	k, ok := LookupKind(kind)
	if !ok {
		return nil, fmt.Errorf("no kind of server named %q (known: %s)", kind, strings.Join(KindNames(), ", "))
	}
	var fresh func() KindOptions
	if c, ok := k.Abilities.(Configurable); ok {
		fresh = c.Options
	}
	return yamlkeys.Decode(n, yamlkeys.Block{Owner: kind, Noun: "setting", None: "takes no settings in a scenario (its servers start as they are)"}, fresh)
}

// Versioner is a server that can say its version, as the server reports it.
type Versioner interface {
	Version(ctx context.Context) (string, error)
}

// ClientAddresser is a server whose clients are given more than an
// address: what process p of a run passes its client library to reach the
// server at addr (PostgreSQL: a DSN naming the process).
type ClientAddresser interface {
	ClientAddress(addr string, p int) string
}

// Kinded is a server that says its kind's name.
type Kinded interface {
	Kind() string
}

var (
	kindsMu sync.Mutex
	kinds   = map[string]Kind{}
)

// RegisterKind makes a kind of server known; its package calls it from
// init.
// A second kind of the same name panics.
func RegisterKind(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if k.Program != nil && k.Start == nil {
		spec := *k.Program
		if spec.Kind == "" {
			spec.Kind = k.Name
		}
		k.Program = &spec
		k.Start = func(ctx context.Context, c *Cluster, _ StartOptions) error {
			_, err := c.startProgram(ctx, spec)
			return err
		}
	}
	if k.Name == "" || k.Start == nil {
		panic("cluster: RegisterKind: a kind needs a name and a Start (or a Program)")
	}
	if _, dup := kinds[k.Name]; dup {
		panic("cluster: RegisterKind: " + k.Name + " registered twice")
	}
	kinds[k.Name] = k
}

// Kinds returns every registered kind, by name.
func Kinds() []Kind {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KindNames returns the registered kinds' names, sorted.
func KindNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// LookupKind returns the kind named name.
func LookupKind(name string) (Kind, bool) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	k, ok := kinds[name]
	return k, ok
}

// StartKinds starts the servers of the kinds named, each entry one more
// server or the one ensemble (exec.servers); DefaultKind's when none is
// named.
func (c *Cluster) StartKinds(ctx context.Context, kinds []string, o StartOptions) error {
	if len(kinds) == 0 {
		kinds = []string{DefaultKind}
	}
	for _, k := range kinds {
		if err := c.StartKind(ctx, k, o); err != nil {
			return err
		}
	}
	return nil
}

// ServerKind is the kind of the server named name (redis-0, sentinel-1,
// postgres, etcd-2): the registered kind whose name, or a companion's
// (CompanionNamer), starts it, followed by nothing, '-', '_' or a digit (the longest such);
// false when there is none.
func ServerKind(name string) (string, bool) {
	best, kind := "", ""
	for _, k := range Kinds() {
		names := []string{k.Name}
		if c, ok := k.Abilities.(CompanionNamer); ok {
			names = append(names, c.CompanionNames()...)
		}
		for _, n := range names {
			rest, ok := strings.CutPrefix(name, n)
			if ok && len(n) > len(best) && (rest == "" || strings.ContainsAny(rest[:1], "-_0123456789")) {
				best, kind = n, k.Name
			}
		}
	}
	return kind, kind != ""
}

// StartKind starts the servers of kind name a run needs (Kind.Start).
func (c *Cluster) StartKind(ctx context.Context, name string, o StartOptions) error {
	k, ok := LookupKind(name)
	if !ok {
		return fmt.Errorf("cluster: no kind of server named %q (known: %v)", name, KindNames())
	}
	return k.Start(ctx, c, o)
}

// kindOf is the name of the kind of server s ("" when it does not say).
func kindOf(s Server) string {
	if k, ok := s.(Kinded); ok {
		return k.Kind()
	}
	return ""
}

// kindLocks serialise, per kind, the start of a kind that runs one server
// per cluster (StartOnce).
type kindLocks struct{ m sync.Map }

// lock takes kind's lock and returns its unlock.
func (l *kindLocks) lock(kind string) func() {
	v, _ := l.m.LoadOrStore(kind, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// StartOnce returns the cluster's one server of kind (of type T), starting
// it with start the first time: backends and resources that share the
// server get the same one. A closed cluster starts nothing.
func StartOnce[T Server](c *Cluster, kind string, start func() (T, error)) (T, error) {
	defer c.once.lock(kind)()
	var none T
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return none, ErrClosed
	}
	for _, s := range c.Servers() {
		if t, ok := s.(T); ok && kindOf(s) == kind {
			return t, nil
		}
	}
	return start()
}

// groupSlot holds the run's one group of servers of a kind.
type groupSlot struct {
	mu sync.Mutex
	v  any
}

// slot is kind's group slot.
func (c *Cluster) slot(kind string) *groupSlot {
	v, _ := c.groups.LoadOrStore(kind, &groupSlot{})
	return v.(*groupSlot)
}

// Group is the run's one group of servers of kind (an ensemble: etcd's
// cluster), kept by the cluster: keep is called under the kind's lock
// with the group kept so far (ok false before one) and returns the group
// to keep (an error keeps what was). What a kept group does beyond its
// servers is said by interfaces: ending sessions (KillSessions:
// Cluster.SessionKillers) and naming its leader (Leading: Cluster.Leader).
func Group[T any](c *Cluster, kind string, keep func(cur T, ok bool) (T, error)) (T, error) {
	s := c.slot(kind)
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.v.(T)
	v, err := keep(cur, ok)
	if err != nil {
		var none T
		return none, err
	}
	s.v = v
	return v, nil
}

// Kept is the group of kind that Group keeps, if one is kept.
func Kept[T any](c *Cluster, kind string) (T, bool) {
	s := c.slot(kind)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.v.(T)
	return v, ok
}

// keptGroups are the groups kept (Group), in the order of their kinds'
// names.
func (c *Cluster) keptGroups() []any {
	var kinds []string
	c.groups.Range(func(k, _ any) bool {
		kinds = append(kinds, k.(string))
		return true
	})
	sort.Strings(kinds)
	var out []any
	for _, k := range kinds {
		s := c.slot(k)
		s.mu.Lock()
		if s.v != nil {
			out = append(out, s.v)
		}
		s.mu.Unlock()
	}
	return out
}

// Leading is a group of servers that elects a leader among them
// (Cluster.Leader asks it).
type Leading interface {
	// LeaderServer is the member that leads, or an error when none
	// answers with a leader.
	LeaderServer(ctx context.Context) (Server, error)
}

// The standing cluster's part of a kind (Composer): what
// cluster/external writes docker-compose.yml and compose.servers.yaml from.

// ComposeSpec is how a kind's servers run in the standing cluster.
type ComposeSpec struct {
	// Port is the first port of the kind's block of ten there (Redis's
	// 17000-17029, PostgreSQL's 17030...). Zero: a block from 17100 on,
	// in the order of the kinds' names.
	Port int
	// Services are the kind's services and its servers file's entries,
	// for its block's first port and the image its services run from.
	Services func(port int, image string) ComposeCluster
}

// ComposeCluster is a kind's part of the standing cluster.
type ComposeCluster struct {
	// Services are its services, in order.
	Services []ComposeService
	// Servers are its entries in the servers file (by kind; a Sentinel
	// group in Sentinel).
	Servers map[string][]ServerEntry
	// Sentinel is a Sentinel group's entry.
	Sentinel *SentinelEntry
}

// ComposeService is one service of docker-compose.yml: one server. Its
// strings are written as they are meant, "$" included: the file escapes
// them for docker-compose.
type ComposeService struct {
	// Name is the service's name; its container is locktorture-<Name>.
	Name string
	// Image is its image (a reference, or ${VAR:-default}: kept as it is).
	Image string
	// Entrypoint and Command are its command line.
	Entrypoint, Command []string
	// Environment are its environment variables.
	Environment map[string]string
	// DependsOn are services that must be healthy first.
	DependsOn []string
	// Healthcheck is its health check's test (["CMD", ...] or
	// ["CMD-SHELL", "..."]); empty: none. Retries is how many 1s tries
	// it has (0: 30).
	Healthcheck []string
	Retries     int
	// Profile, when set, puts the service in that docker-compose profile:
	// it starts only when asked (docker-compose --profile NAME up -d), as
	// one whose image no registry has must (`docker-compose up -d` would
	// otherwise fail to pull it where it was not built).
	Profile string
}

// ComposePassword is the password of the standing cluster's PostgreSQL
// and MariaDB (and of the PgBouncer in front of that PostgreSQL): a test
// cluster's, written in its files. Not the program's name: a password is
// a secret, masked wherever the harness writes it, and "locktorture"
// masked would blank every repeat command and path in the output.
const ComposePassword = "standing-cluster-pw"

// ComposeContainer is the container name of service name.
func ComposeContainer(name string) string { return "locktorture-" + name }

// ComposeEntry is the servers file entry of a service's server at addr,
// controlled through its container.
func ComposeEntry(service, addr string) ServerEntry {
	return ServerEntry{Addr: addr, Control: "docker", Container: ComposeContainer(service)}
}
