package backends

// The Python library rows: each a library's own lock, as its docs show it,
// driven by an adapter under clients/python/ (docs/client-protocol.md) run
// with Debian's interpreter, from Debian 12's packages (make deps installs
// them: ClientPackages). Their claims, and what each family expects of
// them, are in docs/compare.md ("The Python library rows").
func init() {
	py := func(script string, args ...string) []string {
		return append([]string{PythonInterpreter, "clients/python/" + script}, args...)
	}
	registerProgram(Info{
		Name:        "redis-py",
		Description: "redis-py's Lock (python3-redis), taken with blocking=False and a fixed lease (clients/python/redis_py_try_lock.py)",
		Servers:     "1 redis-server",
		Kinds:       []string{"redis"},
		Lease:       true,
		Library:     &Library{Name: "redis-py", Module: "redis", Python: "redis", Debian: "python3-redis", Language: "Python"},
	}, Program{Command: py("redis_py_try_lock.py")})
	registerProgram(Info{
		Name:         "kazoo",
		Description:  "kazoo's Lock (python3-kazoo) over ZooKeeper: an ephemeral znode held by kazoo's session; lost on SUSPENDED/LOST, as its docs advise (clients/python/kazoo_lock.py)",
		Servers:      "1 or 3 zookeeper (zookeeper: {members: 3})",
		Kinds:        []string{"zookeeper"},
		Lease:        true,
		Library:      &Library{Name: "kazoo", Module: "kazoo", Python: "kazoo", Debian: "python3-kazoo", Language: "Python"},
		RenewsItself: true,
	}, Program{Command: py("kazoo_lock.py")})
	registerProgram(Info{
		Name:        "python-etcd3",
		Description: "python-etcd3's Lock (python3-etcd3) over etcd: a lease of whole seconds, never refreshed; runs over TLS (its token is a gRPC call credential) (clients/python/etcd3_lock.py)",
		Servers:     "1 or 3 etcd (etcd: {members: 3}), with TLS",
		Kinds:       []string{"etcd"},
		Lease:       true,
		Library:     &Library{Name: "python-etcd3", Module: "etcd3", Python: "etcd3", Debian: "python3-etcd3", Language: "Python"},
	}, Program{Command: py("etcd3_lock.py"), TLS: true})
	tooz := &Library{Name: "tooz", Module: "tooz", Python: "tooz", Debian: "python3-tooz", Language: "Python"}
	registerProgram(Info{
		Name:         "tooz-redis",
		Description:  "tooz's lock, redis driver (python3-tooz): redis-py's Lock, reacquired by the coordinator's heartbeat thread (clients/python/tooz_lock.py redis)",
		Servers:      "1 redis-server",
		Kinds:        []string{"redis"},
		Lease:        true,
		Library:      tooz,
		RenewsItself: true,
	}, Program{Command: py("tooz_lock.py", "redis")})
	registerProgram(Info{
		Name:         "tooz-zookeeper",
		Description:  "tooz's lock, zookeeper driver (python3-tooz): kazoo's Lock under tooz's coordinator (clients/python/tooz_lock.py zookeeper)",
		Servers:      "1 or 3 zookeeper (zookeeper: {members: 3})",
		Kinds:        []string{"zookeeper"},
		Lease:        true,
		Library:      tooz,
		RenewsItself: true,
	}, Program{Command: py("tooz_lock.py", "zookeeper")})
	registerProgram(Info{
		Name:        "tooz-postgresql",
		Description: "tooz's lock, postgresql driver (python3-tooz, python3-psycopg2): pg_try_advisory_lock on a connection of the lock's own (clients/python/tooz_lock.py postgresql)",
		Servers:     "1 postgres",
		Kinds:       []string{"postgres"},
		Library:     tooz,
	}, Program{Command: py("tooz_lock.py", "postgresql")})
	clientPackages["tooz-postgresql"] = []string{"python3-psycopg2"}
	registerProgram(Info{
		Name:        "tooz-mysql",
		Description: "tooz's lock, mysql driver (python3-tooz, python3-pymysql) over MariaDB: GET_LOCK on a connection of the lock's own (clients/python/tooz_lock.py mysql)",
		Servers:     "1 mariadb",
		Kinds:       []string{"mariadb"},
		Library:     tooz,
	}, Program{Command: py("tooz_lock.py", "mysql")})
}
