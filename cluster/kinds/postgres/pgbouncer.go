package postgres

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/locktorture/locktorture/cluster"
)

// poolSize is the clients' pool size: PoolSize, or its default.
func poolSize(o PgBouncerOptions) int {
	switch {
	case o.PoolSize > 0:
		return o.PoolSize
	case o.PoolMode == PoolTransaction:
		return max(1, o.Clients/2)
	}
	return max(1, o.Clients)
}

// PgBouncerKind is the PgBouncer kind's name.
const PgBouncerKind = "pgbouncer"

// The database names the harness's PgBouncer serves (both the harness's
// database on the server): the clients' pool, and the postgres
// resource's own pool, so that the resource's connections never take a
// server connection from the clients' pool.
const (
	pgbouncerClientsDB  = postgresDatabase
	pgbouncerResourceDB = postgresDatabase + "_resource"
	// pgbouncerResourcePool is the resource's pool size (its pgxpool's).
	pgbouncerResourcePool = 16
)

// PgBouncer is a PgBouncer in front of the run's PostgreSQL (started by
// the harness: as a local process on 127.0.0.1 with its own ini and auth
// file, or in a container), or one someone else runs (a servers file's
// pgbouncer DSN). Its auth file holds the role's SCRAM verifier as the
// server keeps it, never the password: PgBouncer checks the client's
// SCRAM proof against it and logs in to the server with the client's
// key (SCRAM pass-through). The server's own clients dial it through
// their links; it dials the server directly.
type PgBouncer struct {
	cluster.Faultable
	pg  *Postgres
	opt PgBouncerOptions
	// externalDSN is the connection string of one someone else runs.
	externalDSN string
}

// StartPgBouncer starts c's PgBouncer in front of pg the first time it is
// called (on an external cluster: hands out the one named) and returns
// the same one afterwards.
func StartPgBouncer(ctx context.Context, c *cluster.Cluster, pg *Postgres, opt PgBouncerOptions) (*PgBouncer, error) {
	if err := CheckPoolMode(opt.PoolMode); err != nil {
		return nil, fmt.Errorf("cluster: pgbouncer: %w", err)
	}
	return cluster.Group(c, PgBouncerKind, func(cur *PgBouncer, ok bool) (*PgBouncer, error) {
		if ok {
			return cur, nil
		}
		return cluster.One(c, PgBouncerKind, PgBouncerKind,
			"the run puts PgBouncer in front of PostgreSQL (postgres: {via: pgbouncer}), but the servers file names none (pgbouncer: DSN)",
			func(dsn string, s cluster.Faultable) (*PgBouncer, error) { return adoptPgBouncer(c, dsn, s, pg, opt) },
			func() (*PgBouncer, error) { return startPgBouncer(ctx, c, pg, opt) })
	})
}

// frontOf is c's PgBouncer when one runs in front of pg, else nil.
func frontOf(c *cluster.Cluster, pg *Postgres) *PgBouncer {
	if b, ok := cluster.Kept[*PgBouncer](c, PgBouncerKind); ok && b.pg == pg {
		return b
	}
	return nil
}

// ClientDSN is the DSN client process p dials c's PostgreSQL with,
// through its own link: to the PgBouncer in front of pg when the run put
// one there, else to pg itself.
func ClientDSN(c *cluster.Cluster, pg *Postgres, p int) string {
	if b := frontOf(c, pg); b != nil {
		return b.ClientAddress(c.ClientAddr(p, b), p)
	}
	return pg.clientDSN(c.ClientAddr(p, pg), Application(p))
}

// ResourceDSN is the DSN the postgres resource dials (no link,
// as the resource stands for a database the holders write to, not for a
// client): the resource's own pool of the PgBouncer the harness runs in
// front of pg, else pg itself. A PgBouncer someone else runs is not used
// for it: it would not carry the run's schema (search_path) to the
// server.
func ResourceDSN(c *cluster.Cluster, pg *Postgres) string {
	const app = "locktorture-resource"
	if b := frontOf(c, pg); b != nil && b.externalDSN == "" {
		return b.dsn(b.Addr(), pgbouncerResourceDB, app)
	}
	return pg.clientDSN(pg.Addr(), app)
}

// startPgBouncer starts c's PgBouncer in front of pg.
func startPgBouncer(ctx context.Context, c *cluster.Cluster, pg *Postgres, opt PgBouncerOptions) (*PgBouncer, error) {
	const name = PgBouncerKind
	if pg.externalDSN != "" {
		return nil, fmt.Errorf("%w: %s: the harness starts a PgBouncer only in front of a PostgreSQL it started; name yours in the servers file (pgbouncer: DSN)", cluster.ErrStart, name)
	}
	if c.ServersTLS() {
		return nil, fmt.Errorf("%w: %s: security: tls (--tls) is not supported with a PgBouncer yet", cluster.ErrStart, name)
	}
	pv := c.Provider()
	secret, err := pg.roleSecret(ctx)
	if err != nil {
		return nil, err
	}
	bin, err := pv.Program("pgbouncer", "pgbouncer", "/usr/sbin")
	if err != nil {
		return nil, err
	}
	dir, host, err := c.ServerHome(ctx, name)
	if err != nil {
		return nil, err
	}
	// A free local port can be taken before PgBouncer binds it: try
	// another; a container's address is its own.
	attempts := 1
	if r, ok := pv.(cluster.PortRacer); ok && r.PortsRace() {
		attempts = 3
	}
	var lastErr error
	for range attempts {
		port, err := pv.Port(6432)
		if err != nil {
			return nil, err
		}
		s := cluster.NewFaultable(PgBouncerKind, name)
		s.SetAddr(host, port)
		b := &PgBouncer{Faultable: s, pg: pg, opt: opt}
		b.SetReady(b.ping)
		ini := path.Join(dir, "pgbouncer.ini")
		auth := path.Join(dir, "userlist.txt")
		u, err := c.Launch(ctx, cluster.Spec{
			Name:    name,
			Kind:    PgBouncerKind,
			Program: bin,
			Args:    []string{ini},
			Dir:     dir,
			// Neither file holds the password (the auth file holds the
			// SCRAM verifier): readable by the server's user, wherever
			// it runs.
			Files: []cluster.File{
				{Path: ini, Content: []byte(b.ini(auth, pgbouncerAuthType(secret))), Mode: 0o644},
				{Path: auth, Content: []byte(pgbouncerAuthLine(postgresUser, secret)), Mode: 0o644},
			},
			// PgBouncer refuses to run as root: as root it runs as
			// PostgreSQL's user, whose directory is then its own.
			User:       "postgres",
			StopSignal: syscall.SIGINT, // immediate shutdown: SIGTERM waits for clients to leave
			LogPath:    c.LogPath(name),
		})
		if err != nil {
			return nil, err
		}
		b.SetUnit(u)
		if err := u.Start(ctx); err != nil {
			return nil, err
		}
		if lastErr = cluster.WaitUnit(ctx, name, u, b.ping); lastErr == nil {
			c.AddServer(b)
			return b, nil
		}
		_ = u.Kill(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("cluster: %w", lastErr)
}

// pgbouncerAuthType is the auth_type that checks clients against secret,
// the role's password as the server stores it ("": the server trusts).
func pgbouncerAuthType(secret string) string {
	switch {
	case strings.HasPrefix(secret, "SCRAM-SHA-256$"):
		return "scram-sha-256"
	case strings.HasPrefix(secret, "md5"):
		return "md5"
	}
	return "trust"
}

// ini is the PgBouncer's configuration: the clients' pool and the
// resource's, both in front of the harness's database, its pool mode,
// authType and its authFile, and logging that names no secret.
func (b *PgBouncer) ini(authFile, authType string) string {
	pgHost, pgPort := b.pg.Host(), b.pg.Port()
	if pgHost == "" {
		pgHost = "127.0.0.1"
	}
	var s strings.Builder
	fmt.Fprintf(&s, "[databases]\n")
	fmt.Fprintf(&s, "%s = host=%s port=%d dbname=%s pool_size=%d\n", pgbouncerClientsDB, pgHost, pgPort, postgresDatabase, poolSize(b.opt))
	fmt.Fprintf(&s, "%s = host=%s port=%d dbname=%s pool_size=%d\n", pgbouncerResourceDB, pgHost, pgPort, postgresDatabase, pgbouncerResourcePool)
	fmt.Fprintf(&s, "\n[pgbouncer]\n")
	for _, kv := range [][2]string{
		{"listen_addr", b.Host()},
		{"listen_port", strconv.Itoa(b.Port())},
		{"unix_socket_dir", ""},
		{"auth_type", authType},
		{"auth_file", authFile},
		{"admin_users", postgresUser},
		{"pool_mode", b.opt.PoolMode},
		{"default_pool_size", strconv.Itoa(poolSize(b.opt))},
		{"min_pool_size", "0"},
		{"reserve_pool_size", "0"},
		{"max_client_conn", "2000"},
		{"server_reset_query", "DISCARD ALL"},
		{"server_login_retry", "1"},
		{"ignore_startup_parameters", "extra_float_digits"},
		{"log_connections", "0"},
		{"log_disconnections", "0"},
		{"logfile", ""},
		{"pidfile", ""},
	} {
		fmt.Fprintf(&s, "%s = %s\n", kv[0], kv[1])
	}
	return s.String()
}

// pgbouncerAuthLine is an auth file's line for user with secret (a SCRAM
// verifier or an md5 hash; empty where the server trusts).
func pgbouncerAuthLine(user, secret string) string {
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	return q(user) + " " + q(secret) + "\n"
}

// roleSecret is the harness's role's password as the server stores it
// (pg_authid.rolpassword: a SCRAM verifier, from which the password
// cannot be had), "" when it has none.
func (pg *Postgres) roleSecret(ctx context.Context) (string, error) {
	conn, err := pg.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var secret *string
	if err := conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", postgresUser).Scan(&secret); err != nil {
		return "", fmt.Errorf("cluster: pgbouncer: read the role's verifier: %w", err)
	}
	if secret == nil {
		return "", nil
	}
	return *secret, nil
}

// dsn is the connection string for database db of the PgBouncer at addr
// under application name. Statements go out as unnamed prepared
// statements in one round trip (pgx's exec mode), as PgBouncer's
// transaction pooling needs: a named prepared statement would exist on
// one server connection only.
func (b *PgBouncer) dsn(addr, db, application string) string {
	var u *url.URL
	if b.externalDSN != "" {
		var err error
		if u, err = url.Parse(b.externalDSN); err != nil {
			return b.externalDSN
		}
		u.Host = addr
	} else {
		u, _ = url.Parse(b.pg.clientDSN(addr, application))
		u.Path = "/" + db
	}
	q := u.Query()
	if application != "" {
		q.Set("application_name", application)
	}
	if q.Get("default_query_exec_mode") == "" {
		q.Set("default_query_exec_mode", "exec")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// DSN is the connection string for the clients' pool, dialling the
// PgBouncer directly.
func (b *PgBouncer) DSN() string { return b.dsn(b.Addr(), pgbouncerClientsDB, "locktorture") }

// ClientAddress is the DSN client process p dials the clients' pool
// with at addr (its own link), under p's application name (the harness's
// own for p < 0).
func (b *PgBouncer) ClientAddress(addr string, p int) string {
	app := "locktorture"
	if p >= 0 {
		app = Application(p)
	}
	return b.dsn(addr, pgbouncerClientsDB, app)
}

// ping logs in through the PgBouncer and runs a statement on a server
// connection.
func (b *PgBouncer) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return pingPostgresDSN(ctx, b.DSN())
}

// Version is PgBouncer's version, as its admin console's SHOW VERSION
// says ("PgBouncer 1.18.0").
func (b *PgBouncer) Version(ctx context.Context) (string, error) {
	u, err := url.Parse(b.DSN())
	if err != nil {
		return "", err
	}
	u.Path = "/pgbouncer"
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return "", fmt.Errorf("%s: admin console: %w", b.Name(), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SHOW VERSION").Scan(&v); err != nil {
		return "", fmt.Errorf("%s: SHOW VERSION: %w", b.Name(), err)
	}
	return strings.TrimPrefix(v, "PgBouncer "), nil
}

// adoptPgBouncer is the PgBouncer someone else runs at dsn, as s, in
// front of pg.
func adoptPgBouncer(c *cluster.Cluster, dsn string, s cluster.Faultable, pg *Postgres, opt PgBouncerOptions) (*PgBouncer, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cluster: %w: the external PgBouncer %q is not a postgres://host:port/... URL", cluster.ErrStart, cluster.RedactDSN(dsn))
	}
	s.SetExternal(u.Host)
	b := &PgBouncer{Faultable: s, pg: pg, opt: opt, externalDSN: dsn}
	b.SetReady(b.ping)
	c.AddServer(b)
	return b, nil
}

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:     PgBouncerKind,
		Packages: []string{"pgbouncer"},
		// There is no official PgBouncer image: the one `make images`
		// builds from Debian's packages has it.
		Image: "locktorture-servers:bookworm",
		// exec.servers: [pgbouncer] starts the run's PostgreSQL (or joins
		// it) and a PgBouncer in front, as the run's pgbouncer block says
		// (session mode when it says nothing).
		Start: func(ctx context.Context, c *cluster.Cluster, o cluster.StartOptions) error {
			bo := bouncerOptions(o)
			pg, err := Start(ctx, c, RunOptions(o))
			if err != nil {
				return err
			}
			_, err = StartPgBouncer(ctx, c, pg, bo)
			return err
		},
		Abilities: bouncerKind{},
	})
}

// bouncerKind is what the PgBouncer kind can do beyond starting its
// servers (the cluster abilities it implements).
type bouncerKind struct{}

// CheckDSN: a PgBouncer is named by its DSN.
func (bouncerKind) CheckDSN(a string) error {
	u, err := url.Parse(a)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return fmt.Errorf("%q is not a DSN (postgres://user:password@host:6432/database)", cluster.RedactDSN(a))
	}
	return nil
}

func (bouncerKind) Check(ctx context.Context, e cluster.Endpoint) error {
	return pingPostgresDSN(ctx, e.Addr)
}

func (bouncerKind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: 17070, Services: pgbouncerCompose}
}

func (bouncerKind) Options() cluster.KindOptions { return &PgBouncerOptions{PoolMode: PoolSession} }

func (bouncerKind) OlderKeys() map[string]string {
	return map[string]string{"pool_mode": "pool_mode", "pool_size": "pool_size"}
}

// pgbouncerCompose is PgBouncer in the standing cluster: one, in session
// mode (the scenarios' default pool_mode), in front of the standing
// cluster's PostgreSQL, with the configuration the harness gives its own
// (the auth file holds the standing cluster's password, as its
// docker-compose.yml does: SCRAM to clients and to the server alike).
// PgBouncer refuses to run as root: it runs as the image's postgres user.
// No official image has PgBouncer: the service is in the profile
// pgbouncer (docker-compose --profile pgbouncer up -d), so that the rest
// comes up where locktorture-servers was not built.
func pgbouncerCompose(port int, image string) cluster.ComposeCluster {
	pgPort := composePort
	const dir = "/tmp/pgbouncer"
	at := func(kind string, port int) cluster.Faultable {
		s := cluster.NewFaultable(kind, kind)
		s.SetAddr("127.0.0.1", port)
		return s
	}
	b := &PgBouncer{Faultable: at(PgBouncerKind, port), pg: &Postgres{Faultable: at(Kind, pgPort)},
		opt: PgBouncerOptions{PoolMode: PoolSession, PoolSize: 50}}
	script := "mkdir -p " + dir + "\ncat >" + dir + "/pgbouncer.ini <<'EOF'\n" + b.ini(dir+"/userlist.txt", "scram-sha-256") + "EOF\n" +
		"cat >" + dir + "/userlist.txt <<'EOF'\n" + pgbouncerAuthLine(postgresUser, cluster.ComposePassword) + "EOF\n" +
		"chown -R postgres " + dir + "\nexec runuser -u postgres -- /usr/sbin/pgbouncer " + dir + "/pgbouncer.ini\n"
	p := strconv.Itoa(port)
	return cluster.ComposeCluster{
		Services: []cluster.ComposeService{{Name: PgBouncerKind, Image: image,
			Entrypoint: []string{"sh", "-c", script},
			DependsOn:  []string{"postgres"},
			Profile:    PgBouncerKind,
			Healthcheck: []string{"CMD-SHELL", "PGPASSWORD=" + cluster.ComposePassword + " psql -h 127.0.0.1 -p " + p + " -U " + postgresUser +
				" -d " + pgbouncerClientsDB + " -Atc 'SELECT 1'"}}},
		Servers: map[string][]cluster.ServerEntry{PgBouncerKind: {cluster.ComposeEntry(PgBouncerKind,
			"postgres://"+postgresUser+":"+cluster.ComposePassword+"@127.0.0.1:"+p+"/"+pgbouncerClientsDB+"?sslmode=disable")}},
	}
}
