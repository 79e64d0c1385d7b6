package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/links"
	"github.com/locktorture/locktorture/cluster/local"
	"github.com/locktorture/locktorture/internal/secret"
)

// The user and database every MariaDB the harness starts has.
const (
	// mariadbUser is the run's user: it may do anything on the server, and
	// logs in with the run's own password only.
	mariadbUser = "locktorture"
	// mariadbDatabase is the database backends and resources use on a
	// server the harness starts (on someone else's, a database of the
	// run's own: DatabaseOf).
	mariadbDatabase = "locktorture"
)

// Kind is the MariaDB kind's name.
const Kind = "mariadb"

// MariaDB is the run's MariaDB server (Debian's mariadb-server), started
// once per cluster: a data directory of its own (on this machine a copy
// of one mariadb-install-db kept between runs, in a container made by it
// at its first start), mariadbd on the provider's
// address (127.0.0.1 and a free port locally) with a socket of its own,
// run as the `mysql` user when the harness is root, and the run's user
// with a password made for the run. Backends and the mysql resource share
// it.
//
// Its pause and kill reach mariadbd (one process); restarted after a kill
// it runs InnoDB's crash recovery and comes back with its data. Commits
// are written to the operating system at once and flushed to disk once a
// second (innodb_flush_log_at_trx_commit=2): a killed server keeps them;
// only an operating system crash could lose the last second.
type MariaDB struct {
	cluster.Faultable
	dsn mariadbDSN

	setupMu sync.Mutex
	setups  map[string]bool
}

// mariadbDSN is what a session needs besides the address: user, password,
// database and the driver's settings (an external DSN's query), and what a
// servers file adds (its username, password and TLS files replace the
// DSN's, for the server whose own address is server).
type mariadbDSN struct {
	user, password, database string
	params                   url.Values
	auth                     *cluster.Auth
	server                   string
}

// parseMariaDBDSN reads mariadb://user:password@host:port/database?params
// (mysql:// alike; the port 3306 when left out; the user and password may
// come from the servers file's username and password_env instead) and
// returns it with its host:port.
func parseMariaDBDSN(s string) (mariadbDSN, string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "mariadb" && u.Scheme != "mysql") || u.Host == "" {
		return mariadbDSN{}, "", fmt.Errorf("%q is not a DSN (mariadb://user:password@host:3306/database)", cluster.RedactDSN(s))
	}
	if u.Port() == "" {
		u.Host += ":3306"
	}
	d := mariadbDSN{database: strings.TrimPrefix(u.Path, "/"), params: u.Query()}
	if u.User != nil {
		d.user = u.User.Username()
		d.password, _ = u.User.Password()
		secret.Register(d.password)
	}
	return d, u.Host, nil
}

// url is the DSN of a session to addr.
func (d mariadbDSN) url(addr string) string {
	u := url.URL{Scheme: "mariadb", User: url.UserPassword(d.user, d.password), Host: addr, Path: "/" + d.database, RawQuery: d.params.Encode()}
	return u.String()
}

// config is the driver's configuration of a session to addr: the DSN's
// settings, placeholders filled in by the client (one round trip per
// statement), and no driver log (a session a fault ended is expected).
func (d mariadbDSN) config(addr string) (*mysql.Config, error) {
	dsn := "tcp(" + addr + ")/" + d.database
	if len(d.params) > 0 {
		dsn += "?" + d.params.Encode()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	cfg.User, cfg.Passwd = d.user, d.password
	if a := d.auth; a != nil {
		if a.Username != "" {
			cfg.User = a.Username
		}
		if a.Password != "" {
			cfg.Passwd = a.Password
		}
		if cfg.TLS, err = a.WithServerName(d.server).TLSConfig(addr); err != nil {
			return nil, fmt.Errorf("mariadb: %w", err)
		}
	}
	cfg.InterpolateParams = true
	cfg.Logger = &mysql.NopLogger{}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	return cfg, nil
}

// Start starts c's MariaDB the first time it is called and returns the
// same server afterwards; on a cluster of servers someone else runs, it
// hands out the one named.
func Start(ctx context.Context, c *cluster.Cluster) (*MariaDB, error) {
	return cluster.StartOnce(c, Kind, func() (*MariaDB, error) {
		return cluster.One(c, Kind, "mariadb", "the backend wants MariaDB, but the servers file names none",
			func(dsn string, s cluster.Faultable) (*MariaDB, error) { return adopt(c, dsn, s) },
			func() (*MariaDB, error) { return start(ctx, c) })
	})
}

// mariadbFirstStart is the script a MariaDB runs as its own user: on the
// first start it makes the data directory (mariadb-install-db: system
// tables, no test database, root by unix socket only) beside it and moves
// it in place once complete, so that a start that failed half-way is
// started afresh; then it runs mariadbd with its arguments. Both use a
// temporary directory of their own: a mariadbd starting removes every
// #sql temporary file in its tmpdir, and in the system's /tmp those of
// another install or server running at once. The init file
// (re)makes the run's user and database at every start. A restart finds
// the data directory and runs the server at once (crash recovery).
const mariadbFirstStart = `set -e
D="$1"; I="$2"; S="$3"; shift 3
T="$D.tmp"
mkdir -p "$T"
if [ ! -d "$D/mysql" ]; then
  rm -rf "$D" "$D.new"
  "$I" --no-defaults --datadir="$D.new" --tmpdir="$T" --skip-test-db --auth-root-authentication-method=socket ` + mariadbInnoDB + ` >"$D.install.log" 2>&1 || { cat "$D.install.log"; rm -rf "$D.new"; exit 1; }
  mv "$D.new" "$D"
fi
exec "$S" --no-defaults --datadir="$D" --tmpdir="$T" "$@"
`

// mariadbInnoDB are the InnoDB settings of both the install and the
// server: small, and commits flushed once a second.
const mariadbInnoDB = "--innodb-buffer-pool-size=16M --innodb-log-file-size=8M --innodb-flush-log-at-trx-commit=2 --innodb-doublewrite=0"

// start starts c's MariaDB through its provider.
func start(ctx context.Context, c *cluster.Cluster) (*MariaDB, error) {
	if c.ServersTLS() {
		return nil, fmt.Errorf("%w: mariadb: security: tls (--tls) is not supported for the run's own MariaDB yet; its sessions log in with the run's own password", cluster.ErrStart)
	}
	pv := c.Provider()
	server, err := pv.Program("mariadbd", "mariadb-server", "/usr/sbin")
	if err != nil {
		return nil, err
	}
	install, err := pv.Program("mariadb-install-db", "mariadb-server")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{Faultable: cluster.NewFaultable(Kind, "mariadb"),
		dsn: mariadbDSN{user: mariadbUser, password: cluster.NewPassword(), database: mariadbDatabase}, setups: map[string]bool{}}
	secret.Register(m.dsn.password)
	m.SetReady(m.ping)
	init := "CREATE USER IF NOT EXISTS '" + mariadbUser + "'@'%' IDENTIFIED BY '" + m.dsn.password + "';\n" +
		"GRANT ALL PRIVILEGES ON *.* TO '" + mariadbUser + "'@'%';\n" +
		"CREATE DATABASE IF NOT EXISTS " + mariadbDatabase + ";\n"
	// On this machine the data directory is a copy of one install kept
	// between runs (mariadbTemplate): mariadb-install-db takes most of a
	// start-up, and every install is the same.
	tmpl, as, err := template(ctx, c, install, server)
	if err != nil {
		return nil, err
	}
	err = c.StartSpec(ctx, &m.Faultable, 3306, func(host string, port int, dir string) (cluster.Spec, error) {
		if tmpl != "" {
			data := path.Join(dir, "data")
			if err := os.RemoveAll(data); err != nil {
				return cluster.Spec{}, fmt.Errorf("cluster: mariadb: %w", err)
			}
			if err := local.CopyTree(tmpl, data, as); err != nil {
				return cluster.Spec{}, fmt.Errorf("cluster: mariadb: copy the template: %w", err)
			}
		}
		// A socket of its own (the system's may be in use), unless its
		// path is too long for a socket address: then an abstract one.
		sock := path.Join(dir, "mariadbd.sock")
		if len(sock) > 100 {
			sock = "@locktorture-mariadb-" + cluster.NewPassword()[:12]
		}
		args := append([]string{install, server,
			"--port=" + strconv.Itoa(port),
			"--bind-address=" + host,
			"--socket=" + sock,
			"--pid-file=" + path.Join(dir, "mariadbd.pid"),
			"--skip-name-resolve",
			"--init-file=" + path.Join(dir, "init.sql"),
			"--max-connections=500",
			// METADATA_LOCK_INFO: who holds which GET_LOCK lock (KillSessions).
			"--plugin-load-add=metadata_lock_info",
		}, strings.Fields(mariadbInnoDB)...)
		return cluster.Spec{Kind: Kind, Program: path.Join(dir, "data"), Args: args, Shell: mariadbFirstStart, Dir: dir, User: "mysql",
			Files: []cluster.File{{Path: path.Join(dir, "init.sql"), Content: []byte(init), Mode: 0o644}}}, nil
	})
	if err != nil {
		return nil, err
	}
	c.AddServer(m)
	return m, nil
}

// template returns, on a provider whose servers run on this
// machine, a data directory made by mariadb-install-db as
// mariadbFirstStart makes it (system tables, no test database, root by
// unix socket only, the same InnoDB settings), kept between runs, and the
// user a copy of it belongs to; elsewhere (a container) it returns "" and
// the server's first start installs. The template's key names the
// programs (path, size and time: a new package makes a new one) and the
// settings.
func template(ctx context.Context, c *cluster.Cluster, install, server string) (string, local.RunAs, error) {
	m, ok := c.Provider().(cluster.Machine)
	if !ok {
		return "", local.RunAs{}, nil
	}
	as, err := m.RunAs("mysql", "the server does not run as root", "mysql")
	if err != nil {
		return "", local.RunAs{}, err
	}
	h := fnv.New32a()
	for _, p := range []string{install, server} {
		st, err := os.Stat(p)
		if err != nil {
			return "", local.RunAs{}, fmt.Errorf("cluster: mariadb: %w", err)
		}
		_, _ = fmt.Fprintf(h, "%s %d %d\n", p, st.Size(), st.ModTime().UnixNano())
	}
	_, _ = h.Write([]byte(mariadbInnoDB))
	key := fmt.Sprintf("mariadb-template-%08x-%s", h.Sum32(), cluster.TemplateFormat)
	scratch := filepath.Join(c.TempDir(), "mariadb-template")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return "", local.RunAs{}, fmt.Errorf("cluster: mariadb: %w", err)
	}
	defer os.RemoveAll(scratch)
	if err := as.Reach(c.TempDir(), scratch); err != nil {
		return "", local.RunAs{}, err
	}
	tmpl, err := m.Template(ctx, key, scratch, server, as, func(ctx context.Context, build string) (string, error) {
		data, tmp := filepath.Join(build, "data"), filepath.Join(build, "tmp")
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return "", fmt.Errorf("cluster: mariadb template: %w", err)
		}
		if err := as.Chown(tmp); err != nil {
			return "", err
		}
		args := append([]string{"--no-defaults", "--datadir=" + data, "--tmpdir=" + tmp, "--skip-test-db", "--auth-root-authentication-method=socket"},
			strings.Fields(mariadbInnoDB)...)
		if err := local.Run(as.Command(ctx, install, args...), build, "", "mariadb template"); err != nil {
			return "", err
		}
		return data, nil
	})
	if err != nil {
		return "", local.RunAs{}, err
	}
	return tmpl, as, nil
}

// adopt is the MariaDB someone else runs at dsn, as s (with its
// credentials: a servers file's, replacing the DSN's).
func adopt(c *cluster.Cluster, dsn string, s cluster.Faultable) (*MariaDB, error) {
	d, addr, err := parseMariaDBDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w: the external MariaDB: %w", cluster.ErrStart, err)
	}
	d.auth, d.server = s.Auth(), addr
	m := &MariaDB{Faultable: s, dsn: d, setups: map[string]bool{}}
	m.SetExternal(addr)
	m.SetReady(m.ping)
	c.AddServer(m)
	return m, nil
}

// Auth is what the servers file adds to the server's DSN (nil: nothing).
func (m *MariaDB) Auth() *cluster.Auth { return m.dsn.auth }

// database is the database the run's tables live in.
func (m *MariaDB) database() string { return m.dsn.database }

// Config is the driver's configuration of a session to the server at addr
// (a client's own link to it; the server's own address for the harness).
func (m *MariaDB) Config(addr string) (*mysql.Config, error) { return m.dsn.config(addr) }

// ClientAddress is the DSN client process p dials the server with at addr
// (its own link): the run's user, password and database.
func (m *MariaDB) ClientAddress(addr string, p int) string { return m.dsn.url(addr) }

// LockName is the GET_LOCK name of a lock key: the run's database and the
// key, so that runs sharing a server never share a lock.
func (m *MariaDB) LockName(key string) string { return m.dsn.database + ":" + key }

// ClientLockName is the GET_LOCK lock a session of client process p holds
// for its whole life, by which KillSessions finds the client's session
// (IS_USED_LOCK names its connection).
func (m *MariaDB) ClientLockName(p int) string {
	return m.dsn.database + ":client:" + links.ClientName(p)
}

// Open opens a pool of sessions to the server's own address, for the
// harness (setup, faults, the resource); the caller closes it.
func (m *MariaDB) Open(ctx context.Context) (*sql.DB, error) {
	cfg, err := m.dsn.config(m.Addr())
	if err != nil {
		return nil, err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mariadb: %w", err)
	}
	return sql.OpenDB(conn), nil
}

// ping logs in and pings.
func (m *MariaDB) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return pingMariaDB(ctx, m.dsn, m.Addr())
}

// pingMariaDB logs in to addr with d and pings.
func pingMariaDB(ctx context.Context, d mariadbDSN, addr string) error {
	cfg, err := d.config(addr)
	if err != nil {
		return err
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	return db.PingContext(ctx)
}

// exec runs statements on a fresh session.
func (m *MariaDB) exec(ctx context.Context, stmts ...string) error {
	db, err := m.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// Setup runs statements (CREATE TABLE IF NOT EXISTS, INSERT IGNORE) once
// per server under name: the first successful call runs them; later calls
// with the same name do nothing. Calls are serialized, so a backend and a
// resource sharing a table never race to create it.
func (m *MariaDB) Setup(ctx context.Context, name string, stmts ...string) error {
	m.setupMu.Lock()
	defer m.setupMu.Unlock()
	if m.setups[name] {
		return nil
	}
	if err := m.exec(ctx, stmts...); err != nil {
		return fmt.Errorf("cluster: mariadb setup %s: %w", name, err)
	}
	m.setups[name] = true
	return nil
}

// Version is the server's version, as SELECT VERSION() says.
func (m *MariaDB) Version(ctx context.Context) (string, error) {
	db, err := m.Open(ctx)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "", fmt.Errorf("%s: SELECT VERSION(): %w", m.Name(), err)
	}
	return v, nil
}

// KillSessions has MariaDB end client sessions (KILL CONNECTION): those of
// the clients named (found by the lock each client session holds,
// ClientLockName), or, with none, every client session that holds a
// GET_LOCK lock or has a transaction open (a row locked FOR UPDATE). The
// harness's own sessions (the resource's) are never touched.
func (m *MariaDB) KillSessions(ctx context.Context, clients []int) ([]map[string]any, error) {
	db, err := m.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	targets := map[int64]string{} // connection id -> client
	if len(clients) > 0 {
		for _, p := range clients {
			var id sql.NullInt64
			if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?)", m.ClientLockName(p)).Scan(&id); err != nil {
				return nil, fmt.Errorf("%s: kill session: %w", m.Name(), err)
			}
			if id.Valid {
				targets[id.Int64] = links.ClientName(p)
			}
		}
	} else if targets, err = m.holders(ctx, db); err != nil {
		return nil, err
	}
	var out []map[string]any
	for id, client := range targets {
		_, err := db.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10))
		var me *mysql.MySQLError
		if err != nil && !(errors.As(err, &me) && me.Number == 1094) { // 1094: no such thread (gone already)
			return out, fmt.Errorf("%s: kill connection %d: %w", m.Name(), id, err)
		}
		out = append(out, map[string]any{"server": m.Name(), "client": client, "id": id, "killed": err == nil})
	}
	return out, nil
}

// holders are the client sessions that hold a GET_LOCK lock besides
// their client lock, or a transaction open on the run's tables (a row
// locked FOR UPDATE): connection id to client. METADATA_LOCK_INFO shows
// both at once (a transaction keeps its tables' metadata locks to its
// end), where INNODB_TRX may be a tenth of a second behind.
func (m *MariaDB) holders(ctx context.Context, db *sql.DB) (map[int64]string, error) {
	prefix := m.dsn.database + ":"
	clients, holding := map[int64]string{}, map[int64]bool{}
	err := scanRows(ctx, db, func(id int64, name string) {
		if c, ok := strings.CutPrefix(name, "User lock "+prefix+"client:"); ok {
			clients[id] = c
		} else if strings.HasPrefix(name, "User lock "+prefix) || name == "Table metadata lock "+m.dsn.database {
			holding[id] = true
		}
	}, "SELECT THREAD_ID, CONCAT(LOCK_TYPE, ' ', TABLE_SCHEMA) FROM information_schema.METADATA_LOCK_INFO")
	if err != nil {
		return nil, fmt.Errorf("%s: find the sessions that hold a lock (METADATA_LOCK_INFO, which the harness's own server loads; on another, name the clients): %w", m.Name(), err)
	}
	out := map[int64]string{}
	for id, c := range clients {
		if holding[id] {
			out[id] = c
		}
	}
	return out, nil
}

// scanRows runs query, whose rows are an id and a string, calling row for each.
func scanRows(ctx context.Context, db *sql.DB, row func(int64, string), query string) error {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var s string
		if err := rows.Scan(&id, &s); err != nil {
			return err
		}
		row(id, s)
	}
	return rows.Err()
}

// endpointDSN is a servers file's MariaDB: its DSN and credentials.
func endpointDSN(e cluster.Endpoint) (mariadbDSN, string, error) {
	d, addr, err := parseMariaDBDSN(e.Addr)
	d.auth, d.server = e.Auth, addr
	return d, addr, err
}

// DatabaseOf is the database of an external run of namespace.
func DatabaseOf(namespace string) string { return "locktorture_" + namespace }

func init() {
	cluster.RegisterKind(cluster.Kind{
		Name:        Kind,
		Packages:    []string{"mariadb-server"},
		Image:       "mariadb:11.4",
		StartupCost: time.Second, // copies its data directory, then starts
		Start: func(ctx context.Context, c *cluster.Cluster, _ cluster.StartOptions) error {
			_, err := Start(ctx, c)
			return err
		},
		Abilities: kind{},
	})
}

// kind is what the MariaDB kind can do beyond starting its servers (the
// cluster abilities it implements).
type kind struct{}

func (kind) EndsSessions() bool { return true }

func (kind) Compose() *cluster.ComposeSpec {
	return &cluster.ComposeSpec{Port: 17060, Services: mariadbCompose}
}

// CheckDSN: a MariaDB server is named by its DSN.
func (kind) CheckDSN(a string) error {
	_, _, err := parseMariaDBDSN(a)
	return err
}

func (kind) Check(ctx context.Context, e cluster.Endpoint) error {
	d, addr, err := endpointDSN(e)
	if err != nil {
		return err
	}
	return pingMariaDB(ctx, d, addr)
}

// Prepare creates the run's own database and names it in the DSN.
func (kind) Prepare(ctx context.Context, e cluster.Endpoint, namespace string) (string, error) {
	dsn := e.Addr
	d, addr, err := endpointDSN(e)
	if err != nil {
		return "", err
	}
	db := DatabaseOf(namespace)
	m := &MariaDB{dsn: d}
	m.SetExternal(addr)
	if err := m.exec(ctx, "CREATE DATABASE `"+db+"`"); err != nil {
		return "", fmt.Errorf("%w: mariadb %s: create the run's database %s (the user needs CREATE): %w", cluster.ErrServerCheck, cluster.RedactDSN(dsn), db, err)
	}
	d.database = db
	return d.url(addr), nil
}

// Cleanup drops the run's database.
func (kind) Cleanup(ctx context.Context, dsns []cluster.Endpoint, namespace string) error {
	d, addr, err := endpointDSN(dsns[0])
	if err != nil {
		return err
	}
	db := DatabaseOf(namespace)
	m := &MariaDB{dsn: d}
	m.SetExternal(addr)
	if err := m.exec(ctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
		return fmt.Errorf("mariadb: drop the run's database %s: %w", db, err)
	}
	return nil
}

// mariadbCompose is MariaDB in the standing cluster: one server, its data
// directory made at the first start as a run's is (the official image and
// one with Debian's packages alike: mariadbd drops root for the mysql
// user itself), the user locktorture with the password locktorture, and
// the database locktorture.
func mariadbCompose(port int, image string) cluster.ComposeCluster {
	p := strconv.Itoa(port)
	script := `D=/var/lib/locktorture-mariadb
if [ ! -d $D/mysql ]; then
  mariadb-install-db --no-defaults --user=mysql --datadir=$D --skip-test-db --auth-root-authentication-method=socket >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
fi
printf "CREATE USER IF NOT EXISTS '%s'@'%%' IDENTIFIED BY '%s';\nGRANT ALL PRIVILEGES ON *.* TO '%s'@'%%';\nCREATE DATABASE IF NOT EXISTS %s;\n" "$MARIADB_USER" "$MARIADB_PASSWORD" "$MARIADB_USER" "$MARIADB_DATABASE" >/tmp/init.sql
exec mariadbd --no-defaults --user=mysql --datadir=$D --port=` + p + ` --bind-address=127.0.0.1 --socket=/tmp/mariadbd.sock --skip-name-resolve --init-file=/tmp/init.sql --plugin-load-add=metadata_lock_info
`
	return cluster.ComposeCluster{
		Services: []cluster.ComposeService{{Name: "mariadb", Image: image,
			Environment: map[string]string{"MARIADB_USER": "locktorture", "MARIADB_PASSWORD": cluster.ComposePassword, "MARIADB_DATABASE": "locktorture"},
			Entrypoint:  []string{"sh", "-c", script},
			Healthcheck: []string{"CMD-SHELL", "mariadb-admin ping -h 127.0.0.1 -P " + p + " -u locktorture -p" + cluster.ComposePassword + " --silent"},
			Retries:     60}},
		Servers: map[string][]cluster.ServerEntry{Kind: {cluster.ComposeEntry("mariadb",
			"mariadb://locktorture:"+cluster.ComposePassword+"@127.0.0.1:"+p+"/locktorture")}},
	}
}
