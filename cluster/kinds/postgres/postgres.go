package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/cluster/local"
)

// The role and database every PostgreSQL the harness starts has. The role
// is the cluster's superuser; connections from 127.0.0.1 need no password.
const (
	// postgresUser is the superuser role initdb creates.
	postgresUser = "locktorture"
	// postgresDatabase is the database backends and resources use.
	postgresDatabase = "locktorture"
)

// args turns the options into postgres -c arguments (sorted, so a run is
// repeatable).
func postgresArgs(o Options) []string {
	set := map[string]string{}
	if !o.Durable {
		set["fsync"], set["full_page_writes"] = "off", "off"
	}
	if o.AsyncCommit {
		set["synchronous_commit"] = "off"
	}
	if o.MaxConnections > 0 {
		set["max_connections"] = strconv.Itoa(o.MaxConnections)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + "ms" }
	secs := func(d time.Duration) string { return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) }
	if o.IdleSessionTimeout > 0 {
		set["idle_session_timeout"] = ms(o.IdleSessionTimeout.D())
	}
	if o.IdleInTransactionSessionTimeout > 0 {
		set["idle_in_transaction_session_timeout"] = ms(o.IdleInTransactionSessionTimeout.D())
	}
	if o.TCPKeepalivesIdle > 0 {
		set["tcp_keepalives_idle"] = secs(o.TCPKeepalivesIdle.D())
	}
	if o.TCPKeepalivesInterval > 0 {
		set["tcp_keepalives_interval"] = secs(o.TCPKeepalivesInterval.D())
	}
	if o.TCPKeepalivesCount > 0 {
		set["tcp_keepalives_count"] = strconv.Itoa(o.TCPKeepalivesCount)
	}
	for k, v := range o.Settings {
		set[k] = v
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, "-c", k+"="+set[k])
	}
	return out
}

func isZero(o Options) bool {
	return reflect.DeepEqual(o, Options{})
}

// Postgres is the run's PostgreSQL server, on 127.0.0.1 with a data
// directory of its own under the cluster's temporary directory. When the
// harness runs as root, the server runs as the `postgres` system user
// (PostgreSQL refuses root).
//
// Its pause and kill reach the postmaster and every backend; restarted
// after a kill it runs crash recovery and comes back with its data.
type Postgres struct {
	cluster.Faultable
	// externalDSN is the connection string of a server someone else runs.
	externalDSN string
	// password is the run's own password for postgresUser over TCP (set
	// at start, random per run): no one else on the machine can log in.
	password string
	// tlsCA, with TLS (Options.TLS), is the run's CA file: clients dial
	// with sslmode=verify-full against it.
	tlsCA   string
	opt     Options
	dataDir string

	setupMu sync.Mutex
	setups  map[string]bool
}

// Start starts c's PostgreSQL the first time it is called and
// returns the same server afterwards: backends and the postgres resource
// share it. A later call may pass zero options, or the same ones; other
// settings are an error (the server already runs with the first).
func Start(ctx context.Context, c *cluster.Cluster, opt Options) (*Postgres, error) {
	pg, err := cluster.Group(c, Kind, func(cur *Postgres, ok bool) (*Postgres, error) {
		if c.Closed() {
			return nil, cluster.ErrClosed
		}
		if ok {
			if !isZero(opt) && !reflect.DeepEqual(opt, cur.opt) {
				return nil, fmt.Errorf("cluster: postgres already runs with %+v, not %+v", cur.opt, opt)
			}
			return cur, nil
		}
		return cluster.One(c, Kind, "postgres", "the backend wants PostgreSQL, but the servers file names none",
			func(dsn string, s cluster.Faultable) (*Postgres, error) { return adopt(c, dsn, s, opt) },
			func() (*Postgres, error) { return start(ctx, c, opt) })
	})
	if err != nil {
		return nil, err
	}
	if opt.Bouncer.PoolMode != "" {
		if _, err := StartPgBouncer(ctx, c, pg, opt.Bouncer); err != nil {
			return nil, err
		}
	}
	return pg, nil
}

// adopt is the PostgreSQL someone else runs at dsn, as s (its host and
// port dialled; its credentials are the DSN's).
func adopt(c *cluster.Cluster, dsn string, s cluster.Faultable, opt Options) (*Postgres, error) {
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("cluster: %w: the external PostgreSQL %q is not a postgres://host:port/... URL", cluster.ErrStart, dsn)
	}
	s.SetExternal(u.Host)
	pg := newPostgres(s, opt, "")
	pg.externalDSN = dsn
	c.AddServer(pg)
	return pg, nil
}

func start(ctx context.Context, c *cluster.Cluster, opt Options) (*Postgres, error) {
	m, ok := c.Provider().(cluster.Machine)
	if !ok {
		if c.ServersTLS() {
			return nil, fmt.Errorf("%w: postgres: security: tls (--tls) is supported for a local PostgreSQL only, not in a container yet", cluster.ErrStart)
		}
		return startInContainer(ctx, c, opt)
	}
	return startHere(ctx, c, m, opt)
}

// startHere starts the run's PostgreSQL as a process of this
// machine, its data directory a copy of the cached template.
func startHere(ctx context.Context, c *cluster.Cluster, m cluster.Machine, opt Options) (*Postgres, error) {
	const name = "postgres"
	bins, err := findPostgres()
	if err != nil {
		return nil, err
	}
	as, err := postgresRunAs(m)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(c.TempDir(), name)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	if err := as.Reach(c.TempDir(), base); err != nil {
		return nil, err
	}
	tmpl, err := postgresTemplate(ctx, m, bins, as, base)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(base, "data")
	if err := local.CopyTree(tmpl, data, as); err != nil {
		return nil, fmt.Errorf("cluster: %s: copy the template: %w", name, err)
	}
	// The server's own unix socket directory, unless its path would be too
	// long for a socket address (then TCP only: clients use TCP anyway).
	sock := filepath.Join(base, "sock")
	if err := os.Mkdir(sock, 0o700); err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", name, err)
	}
	if err := as.Chown(sock); err != nil {
		return nil, err
	}
	sockSetting := sock
	if len(sock)+len("/.s.PGSQL.65535") > 100 {
		sockSetting = ""
	}
	// Over TCP only the run's own password logs in (scram); the unix socket,
	// in a directory only the server's user (and root) can enter, trusts —
	// the harness sets the password through it. With no socket (a path too
	// long), TCP trusts as before.
	tlsArgs, tlsCA, err := serverTLS(c, as, base)
	if err != nil {
		return nil, err
	}
	if sockSetting != "" {
		host := "host"
		if tlsCA != "" {
			host = "hostssl" // TCP without TLS is refused
		}
		hba := "local all all trust\n" + host + " all all 127.0.0.1/32 scram-sha-256\n"
		if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o600); err != nil {
			return nil, fmt.Errorf("cluster: %s: %w", name, err)
		}
		if err := as.Chown(filepath.Join(data, "pg_hba.conf")); err != nil {
			return nil, err
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := m.Port(5432)
		if err != nil {
			return nil, err
		}
		s := cluster.NewFaultable(Kind, name)
		s.SetAddr("127.0.0.1", port)
		pg := newPostgres(s, opt, data)
		pg.tlsCA = tlsCA
		args := append([]string{
			"-D", data,
			"-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1",
			"-c", "unix_socket_directories=" + sockSetting,
			"-c", "shared_buffers=32MB",
			"-c", "logging_collector=off",
			"-c", "log_line_prefix=%m [%p] %q%a ",
		}, append(tlsArgs, postgresArgs(opt)...)...)
		u, err := c.Launch(ctx, cluster.Spec{
			Name:       name,
			Kind:       "postgres",
			Program:    bins.postgres,
			Args:       args,
			Dir:        data,
			LogPath:    c.LogPath(name),
			Cred:       as.Cred(),
			StopSignal: syscall.SIGINT, // fast shutdown: SIGTERM waits for clients to leave
			Tree:       true,
		})
		if err != nil {
			return nil, err
		}
		pg.SetUnit(u)
		if err := pg.Unit().Start(ctx); err != nil {
			return nil, err
		}
		ready := pg.ping
		if sockSetting != "" {
			ready = func(ctx context.Context) error { return pg.setPassword(ctx, sockSetting) }
		}
		if lastErr = cluster.WaitUnit(ctx, name, pg.Unit(), ready); lastErr == nil {
			c.AddServer(pg)
			return pg, nil
		}
		_ = pg.Unit().Kill(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("cluster: %w", lastErr)
}

// DSN is the connection string for the harness's database, dialling the
// server directly.
func (pg *Postgres) DSN() string { return pg.clientDSN(pg.Addr(), "locktorture") }

// clientDSN is the connection string a client dials at addr (its own link
// to the server) under application name: the server's own DSN (an external
// one keeps its user, password, database and settings) with the host
// replaced.
func (pg *Postgres) clientDSN(addr, application string) string {
	if pg.externalDSN == "" {
		dsn := postgresDSN(addr, application)
		if pg.password == "" && pg.tlsCA == "" {
			return dsn
		}
		u, err := url.Parse(dsn)
		if err != nil {
			return dsn
		}
		if pg.password != "" {
			u.User = url.UserPassword(postgresUser, pg.password)
		}
		if pg.tlsCA != "" {
			// The server's certificate names 127.0.0.1, which every link
			// listens on too.
			q := u.Query()
			q.Set("sslmode", "verify-full")
			q.Set("sslrootcert", pg.tlsCA)
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	u, err := url.Parse(pg.externalDSN)
	if err != nil {
		return postgresDSN(addr, application)
	}
	u.Host = addr
	q := u.Query()
	if application != "" {
		q.Set("application_name", application)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// postgresDSN is the connection string for the harness's database at addr
// (host:port, e.g. Cluster.ClientAddr's answer), naming the connection
// application in pg_stat_activity and the server log.
func postgresDSN(addr, application string) string {
	u := url.URL{Scheme: "postgres", User: url.User(postgresUser), Host: addr, Path: "/" + postgresDatabase}
	q := url.Values{}
	q.Set("sslmode", "disable")
	if application != "" {
		q.Set("application_name", application)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Application is the application_name a client process's lock
// sessions carry, so a fault can find them in pg_stat_activity
// ("locktorture-p0").
func Application(p int) string { return "locktorture-" + links.ClientName(p) }

// newPostgres is a PostgreSQL server at p whose data is in dataDir.
func newPostgres(s cluster.Faultable, opt Options, dataDir string) *Postgres {
	pg := &Postgres{Faultable: s, opt: opt, dataDir: dataDir, setups: map[string]bool{}}
	pg.SetReady(pg.ping)
	return pg
}

// Connect opens a new connection to the harness's database, dialling the
// server directly (for setup and for faults such as terminating a session).
func (pg *Postgres) Connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return nil, fmt.Errorf("cluster: postgres: %w", err)
	}
	return conn, nil
}

// Setup runs statements (CREATE TABLE IF NOT EXISTS, INSERT ... ON
// CONFLICT DO NOTHING) once per server under name: the first successful
// call runs them; later calls with the same name do nothing. Calls are
// serialized, so a backend and a resource sharing a table never race to
// create it.
func (pg *Postgres) Setup(ctx context.Context, name string, stmts ...string) error {
	pg.setupMu.Lock()
	defer pg.setupMu.Unlock()
	if pg.setups[name] {
		return nil
	}
	conn, err := pg.Connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("cluster: postgres setup %s: %w", name, err)
		}
	}
	pg.setups[name] = true
	return nil
}

// ping connects and runs a trivial query.
// setPassword gives postgresUser a fresh random password through the
// server's unix socket in sockDir (which trusts), then checks that it
// logs in over TCP.
func (pg *Postgres) setPassword(ctx context.Context, sockDir string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	dsn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable", sockDir, pg.Port(), postgresUser, postgresDatabase)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	pw := cluster.NewPassword()
	if _, err := conn.Exec(ctx, "ALTER ROLE "+pgx.Identifier{postgresUser}.Sanitize()+" PASSWORD '"+pw+"'"); err != nil {
		return fmt.Errorf("set the run's password: %w", err)
	}
	pg.password = pw
	return pg.ping(ctx)
}

func (pg *Postgres) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// pgBins are the PostgreSQL programs in use.
type pgBins struct {
	postgres, initdb string
	// version is the server's version ("15.14").
	version string
}

var (
	pgBinsOnce sync.Once
	pgBinsVal  pgBins
	pgBinsErr  error
)

// findPostgres finds postgres and initdb in the newest
// /usr/lib/postgresql/*/bin (Debian keeps them off PATH), else on PATH.
func findPostgres() (pgBins, error) {
	pgBinsOnce.Do(func() { pgBinsVal, pgBinsErr = lookPostgres() })
	return pgBinsVal, pgBinsErr
}

func lookPostgres() (pgBins, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	sort.SliceStable(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	var b pgBins
	for _, d := range dirs {
		pgb, ini := filepath.Join(d, "postgres"), filepath.Join(d, "initdb")
		if isFile(pgb) && isFile(ini) {
			b.postgres, b.initdb = pgb, ini
			break
		}
	}
	if b.postgres == "" {
		pgb, err1 := exec.LookPath("postgres")
		ini, err2 := exec.LookPath("initdb")
		if err1 != nil || err2 != nil {
			return pgBins{}, fmt.Errorf("%w: postgres and initdb are neither in /usr/lib/postgresql/*/bin nor on PATH; install the Debian package postgresql (make deps)", cluster.ErrMissingBinary)
		}
		b.postgres, b.initdb = pgb, ini
	}
	out, err := exec.Command(b.postgres, "--version").Output()
	if err != nil {
		return pgBins{}, fmt.Errorf("%w: %s --version: %w", cluster.ErrStart, b.postgres, err)
	}
	// "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"
	m := regexp.MustCompile(`\d+(\.\d+)*`).Find(out)
	if m == nil {
		return pgBins{}, fmt.Errorf("%w: %s --version said %q", cluster.ErrStart, b.postgres, bytes.TrimSpace(out))
	}
	b.version = string(m)
	return b, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// postgresRunAs is the system user PostgreSQL runs as on m.
func postgresRunAs(m cluster.Machine) (local.RunAs, error) {
	return m.RunAs("postgres", "PostgreSQL refuses to run as root", "postgresql")
}

// postgresTemplate returns a data directory made by initdb (with the
// harness's role and database) for this PostgreSQL version, kept by m
// between runs (the first run builds it in scratch, as the server's user).
func postgresTemplate(ctx context.Context, m cluster.Machine, bins pgBins, as local.RunAs, scratch string) (string, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(bins.postgres))
	key := fmt.Sprintf("pg-template-%s-%08x-%s", bins.version, h.Sum32(), cluster.TemplateFormat)
	return m.Template(ctx, key, scratch, bins.postgres+" "+bins.version, as, func(ctx context.Context, build string) (string, error) {
		data := filepath.Join(build, "data")
		const what = "postgres template"
		if err := local.Run(as.Command(ctx, bins.initdb, "-D", data, "-U", postgresUser, "--auth=trust",
			"--encoding=UTF8", "--locale=C", "--no-sync", "--wal-segsize=1", "--no-instructions"), build, "", what); err != nil {
			return "", err
		}
		// The database is made once, here, in single-user mode (no server,
		// no port), rather than in every run.
		if err := local.Run(as.Command(ctx, bins.postgres, "--single", "-D", data, "-F", "-c", "exit_on_error=on", "postgres"), build,
			"CREATE DATABASE "+postgresDatabase+";\n", what); err != nil {
			return "", err
		}
		// Every run copies the template, so it holds only what a run uses:
		// the harness's database and template1. The postgres database and
		// template0 (a quarter of the files each) are dropped.
		if err := local.Run(as.Command(ctx, bins.postgres, "--single", "-D", data, "-F", "-c", "exit_on_error=on", postgresDatabase), build,
			"DROP DATABASE postgres;\nALTER DATABASE template0 IS_TEMPLATE false;\nDROP DATABASE template0;\n", what); err != nil {
			return "", err
		}
		return data, nil
	})
}

// postgresFirstStart is the script a PostgreSQL started in a
// container runs as its own user: on the first start it makes the data
// directory as the local template is made (initdb with the harness's role
// and the run's password from "$D.pw", that password required over TCP
// from anywhere on the run's network, the harness's database), then it
// runs the server with its arguments. A restart finds
// the data directory and runs the server at once (crash recovery).
const postgresFirstStart = `set -e
D="$1"; shift
if [ ! -s "$D/PG_VERSION" ]; then
  initdb -D "$D" -U ` + postgresUser + ` --auth-local=trust --auth-host=scram-sha-256 --pwfile="$D.pw" --encoding=UTF8 --locale=C --no-sync --wal-segsize=1 >"$D.initdb.log" 2>&1 || { cat "$D.initdb.log"; exit 1; }
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$D/pg_hba.conf"
  echo "CREATE DATABASE ` + postgresDatabase + `;" | postgres --single -D "$D" -F -c exit_on_error=on postgres >/dev/null
fi
exec postgres -D "$D" "$@"
`

// startInContainer starts the run's PostgreSQL through a provider
// other than local (a container): the program and initdb from the image,
// run as the image's postgres user, on the server's own address.
func startInContainer(ctx context.Context, c *cluster.Cluster, opt Options) (*Postgres, error) {
	const name = "postgres"
	pv := c.Provider()
	dir, host, err := c.ServerHome(ctx, name)
	if err != nil {
		return nil, err
	}
	port, err := pv.Port(5432)
	if err != nil {
		return nil, err
	}
	data := path.Join(dir, "pgdata")
	s := cluster.NewFaultable(Kind, name)
	s.SetAddr(host, port)
	pg := newPostgres(s, opt, data)
	pg.password = cluster.NewPassword()
	args := append([]string{
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=*",
		"-c", "unix_socket_directories=",
		"-c", "shared_buffers=32MB",
		"-c", "logging_collector=off",
		"-c", "log_line_prefix=%m [%p] %q%a ",
	}, postgresArgs(opt)...)
	u, err := c.Launch(ctx, cluster.Spec{
		Name:       name,
		Kind:       "postgres",
		Program:    data,
		Args:       args,
		Shell:      postgresFirstStart,
		Files:      []cluster.File{{Path: data + ".pw", Content: []byte(pg.password + "\n"), Mode: 0o644}},
		User:       "postgres",
		LogPath:    c.LogPath(name),
		StopSignal: syscall.SIGINT,
	})
	if err != nil {
		return nil, err
	}
	pg.SetUnit(u)
	if err := pg.Unit().Start(ctx); err != nil {
		return nil, err
	}
	// initdb runs first: allow it more than a server's start (on a loaded
	// machine initdb and the first start take over 15s).
	if err := cluster.WaitUnitFor(ctx, name, pg.Unit(), pg.ping, time.Minute); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.AddServer(pg)
	return pg, nil
}

// pingPostgresDSN connects to dsn and pings.
func pingPostgresDSN(ctx context.Context, dsn string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.Ping(ctx)
}

// Schema is the schema an external run's tables live in.
func Schema(namespace string) string { return "locktorture_" + namespace }

// withSearchPath sets a DSN's search_path (a run-time parameter).
func withSearchPath(dsn, schema string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("%w: postgres: %w", cluster.ErrServersFile, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pgExec runs one statement on dsn.
func pgExec(ctx context.Context, dsn, stmt string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, stmt)
	return err
}

// Kind is the PostgreSQL kind's name.
const Kind = "postgres"

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:        Kind,
		Packages:    []string{"postgresql"},
		Image:       "postgres:16",
		StartupCost: 2 * time.Second, // copies its data directory, then starts
		Start: func(ctx context.Context, c *cluster.Cluster, o cluster.StartOptions) error {
			_, err := Start(ctx, c, RunOptions(o))
			return err
		},
		Abilities: kind{},
	})
}

// kind is what the PostgreSQL kind can do beyond starting its servers
// (the cluster abilities it implements).
type kind struct{}

// composePort is the first port of PostgreSQL's block in the standing
// cluster (its PgBouncer's backend).
const composePort = 17030

func (kind) TLSModes() []string { return []string{cluster.ServersLocal} }

func (kind) Credentials(addr string, a *cluster.Auth) (string, *cluster.Auth, error) {
	return postgresCredentials(addr, a)
}

func (kind) EndsSessions() bool { return true }

func (kind) Options() cluster.KindOptions { return &Options{} }

func (kind) OlderKeys() map[string]string { return map[string]string{Kind + "_via": "via"} }

// CheckDSN: a PostgreSQL server is named by its DSN.
func (kind) CheckDSN(a string) error {
	u, err := url.Parse(a)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return fmt.Errorf("%q is not a DSN (postgres://user:password@host:5432/database)", cluster.RedactDSN(a))
	}
	return nil
}

func (kind) Check(ctx context.Context, e cluster.Endpoint) error {
	return pingPostgresDSN(ctx, e.Addr)
}

// Prepare creates the run's own schema and names it in the DSN's
// search_path.
func (kind) Prepare(ctx context.Context, e cluster.Endpoint, namespace string) (string, error) {
	dsn := e.Addr
	schema := Schema(namespace)
	if err := pgExec(ctx, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return "", fmt.Errorf("%w: postgres %s: create the run's schema %s (the role needs CREATE on the database): %w", cluster.ErrServerCheck, cluster.RedactDSN(dsn), schema, err)
	}
	return withSearchPath(dsn, schema)
}

func (kind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: composePort, Services: postgresCompose}
}

// Cleanup drops the run's schema.
func (kind) Cleanup(ctx context.Context, dsns []cluster.Endpoint, namespace string) error {
	schema := Schema(namespace)
	if err := pgExec(ctx, dsns[0].Addr, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("postgres: drop the run's schema %s: %w", schema, err)
	}
	return nil
}

// Version is the server's version, as SHOW server_version says.
func (pg *Postgres) Version(ctx context.Context) (string, error) {
	conn, err := pg.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("%s: SHOW server_version: %w", pg.Name(), err)
	}
	return v, nil
}

// ClientAddress is the DSN client process p dials the server with at
// addr (its own link): the run's user and database, p's application name
// (the harness's own for p < 0).
func (pg *Postgres) ClientAddress(addr string, p int) string {
	if p < 0 {
		return pg.clientDSN(addr, "locktorture")
	}
	return pg.clientDSN(addr, Application(p))
}

// postgresCompose is PostgreSQL in the standing cluster: one server, its
// database made by the official image's entrypoint, or by initdb in an
// image with Debian's packages (make images).
func postgresCompose(port int, image string) cluster.ComposeCluster {
	p := strconv.Itoa(port)
	script := `if command -v docker-entrypoint.sh >/dev/null; then
  exec docker-entrypoint.sh postgres -p ` + p + ` -c listen_addresses=127.0.0.1
fi
B=$(ls -d /usr/lib/postgresql/*/bin | tail -1); D=/var/lib/postgresql/locktorture
if [ ! -s $D/PG_VERSION ]; then
  mkdir -p $D && chown postgres $D && echo "$POSTGRES_PASSWORD" >/tmp/pw && chown postgres /tmp/pw
  runuser -u postgres -- $B/initdb -D $D -U $POSTGRES_USER --pwfile=/tmp/pw --auth=scram-sha-256 --encoding=UTF8 --locale=C >/dev/null
  echo "CREATE DATABASE $POSTGRES_DB;" | runuser -u postgres -- $B/postgres --single -D $D postgres >/dev/null
fi
mkdir -p /var/run/postgresql && chown postgres /var/run/postgresql
exec runuser -u postgres -- $B/postgres -D $D -p ` + p + ` -c listen_addresses=127.0.0.1
`
	return cluster.ComposeCluster{
		Services: []cluster.ComposeService{{Name: "postgres", Image: image,
			Environment: map[string]string{"POSTGRES_USER": "locktorture", "POSTGRES_PASSWORD": cluster.ComposePassword, "POSTGRES_DB": "locktorture"},
			Entrypoint:  []string{"sh", "-c", script},
			Healthcheck: []string{"CMD-SHELL", "PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1) pg_isready -h 127.0.0.1 -p " + p},
			Retries:     60}},
		Servers: map[string][]cluster.ServerEntry{Kind: {cluster.ComposeEntry("postgres",
			"postgres://"+postgresUser+":"+cluster.ComposePassword+"@127.0.0.1:"+p+"/"+postgresDatabase+"?sslmode=disable")}},
	}
}

// postgresTLS, with TLS (Options.TLS), writes the server's certificate
// and key from the run's CA into dir, owned by the server's user (mode
// 0600: PostgreSQL refuses a key others can read), and returns the
// server's ssl settings and the CA file clients check it against.
// Without TLS: nothing.
func serverTLS(c *cluster.Cluster, as local.RunAs, dir string) ([]string, string, error) {
	if !c.ServersTLS() {
		return nil, "", nil
	}
	files, ca, cert, key, err := c.ServerTLS("postgres", dir, "127.0.0.1")
	if err != nil {
		return nil, "", err
	}
	for _, f := range files {
		if err := os.WriteFile(f.Path, f.Content, 0o600); err != nil {
			return nil, "", fmt.Errorf("cluster: postgres: %w", err)
		}
		if err := as.Chown(f.Path); err != nil {
			return nil, "", err
		}
	}
	a, err := c.RunCA()
	if err != nil {
		return nil, "", err
	}
	return []string{"-c", "ssl=on", "-c", "ssl_cert_file=" + cert, "-c", "ssl_key_file=" + key, "-c", "ssl_ca_file=" + ca}, a.CAFile(), nil
}

// postgresCredentials puts a servers file's username, password and TLS
// files for the PostgreSQL at addr (a DSN) into it (TLS as
// sslmode=verify-full, sslrootcert, sslcert and sslkey): PostgreSQL keeps
// its credentials in its DSN, and nothing is left beside it.
func postgresCredentials(addr string, a *cluster.Auth) (string, *cluster.Auth, error) {
	u, err := url.Parse(addr)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, errors.New("username, password_env and tls need a postgres:// DSN")
	}
	if a.Username != "" || a.Password != "" {
		user := a.Username
		if user == "" && u.User != nil {
			user = u.User.Username()
		}
		u.User = url.UserPassword(user, a.Password)
		if a.Password == "" {
			u.User = url.User(user)
		}
	}
	if t := a.TLS; t != nil {
		if t.ServerName != "" {
			return "", nil, errors.New("tls: server_name is not supported for PostgreSQL: the DSN's host must be the certificate's name")
		}
		q := u.Query()
		mode := "verify-full"
		if t.InsecureSkipVerify {
			mode = "require"
		}
		q.Set("sslmode", mode)
		for k, v := range map[string]string{"sslrootcert": t.CA, "sslcert": t.Cert, "sslkey": t.Key} {
			if v != "" {
				q.Set(k, v)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String(), nil, nil
}

// KillSessions has PostgreSQL terminate client sessions
// (pg_terminate_backend): those of the clients named, or, with none, every
// client session holding an advisory or row lock. The harness's own
// sessions (the resource's) are never touched.
func (pg *Postgres) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	conn, err := pg.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	apps := []string{}
	for _, p := range clients {
		apps = append(apps, Application(p))
	}
	// Client sessions are named locktorture-p<N>; the harness's own (the
	// resource's) are not.
	rows, err := conn.Query(ctx, `
SELECT a.application_name, a.pid, pg_terminate_backend(a.pid)
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND a.application_name LIKE 'locktorture-p%'
  AND (cardinality($1::text[]) > 0 AND a.application_name = ANY($1::text[])
       OR cardinality($1::text[]) = 0 AND EXISTS (
            SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
              AND (l.locktype = 'advisory' OR l.locktype = 'tuple' OR l.mode = 'RowShareLock')))`, apps)
	if err != nil {
		return nil, fmt.Errorf("%s: terminate: %w", pg.Name(), err)
	}
	defer rows.Close()
	var sessions []map[string]any
	for rows.Next() {
		var app string
		var pid int32
		var ok bool
		if err := rows.Scan(&app, &pid, &ok); err != nil {
			return nil, fmt.Errorf("%s: terminate: %w", pg.Name(), err)
		}
		sessions = append(sessions, map[string]any{"client": strings.TrimPrefix(app, "locktorture-"), "pid": pid, "terminated": ok})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: terminate: %w", pg.Name(), err)
	}
	return sessions, nil
}
