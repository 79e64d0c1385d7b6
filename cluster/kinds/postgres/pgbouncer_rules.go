package postgres

import (
	"fmt"
	"slices"

	"github.com/locktorture/locktorture/cluster"
)

// PgBouncer's rules about the run as a whole (cluster.Joiner,
// cluster.RunChecker): where a scenario's postgres: {via: pgbouncer} and
// pgbouncer block are checked, and a PgBouncer joins the run.

// viaOf is what the run puts in front of its PostgreSQL (its postgres
// block's via), or "".
func viaOf(settings map[string]cluster.KindOptions) string {
	if o, ok := settings[Kind].(*Options); ok && o != nil {
		return o.Via
	}
	return ""
}

// Joins: postgres: {via: pgbouncer} puts a PgBouncer in front of the run's
// PostgreSQL.
func (bouncerKind) Joins(kinds []string, settings map[string]cluster.KindOptions) bool {
	return viaOf(settings) == ViaPgBouncer && slices.Contains(kinds, Kind)
}

// CheckRun checks postgres: {via: pgbouncer} and the pgbouncer block: a
// pooler only in front of PostgreSQL, for a run that has one, and
// PgBouncer's settings only for a run with a PgBouncer.
func (bouncerKind) CheckRun(r cluster.RunView) error {
	via := fmt.Sprintf("%s.via", Kind)
	bad := func(format string, a ...any) error {
		return &cluster.BlockError{Kind: Kind, Key: "via", Msg: via + ": " + fmt.Sprintf(format, a...)}
	}
	if viaOf(r.Start.Kinds) == ViaPgBouncer {
		// The postgres resource (named for the kind) runs a PostgreSQL.
		if !slices.Contains(r.Kinds, Kind) && r.Resource != Kind {
			return bad("backend %s runs no PostgreSQL, and the resource is %s: there is nothing to put PgBouncer in front of", r.Backend, r.Resource)
		}
		if r.TLS {
			return bad("%s with security: tls is not supported yet: the harness's PgBouncer speaks no TLS to its clients nor to the server", ViaPgBouncer)
		}
		// Someone else's PgBouncer passes no search_path: the run's schema,
		// where its tables are, does not reach the server through it.
		if r.Servers == cluster.ServersExternal && (r.BackendTables || (r.BackendInTx && r.Resource == Kind)) {
			return bad("%s with servers: external: backend %s uses tables in the run's own schema (resource %s), which a PgBouncer cannot name to the server (it passes no search_path); run it on the harness's own servers (local or docker)", ViaPgBouncer, r.Backend, r.Resource)
		}
	}
	if _, ok := r.Start.Kinds[PgBouncerKind]; ok && !slices.Contains(r.Kinds, PgBouncerKind) {
		return &cluster.BlockError{Kind: PgBouncerKind, Msg: fmt.Sprintf("%s: its settings (pool_mode, pool_size) need a PgBouncer in the run: put one in front of PostgreSQL with %s: {via: %s}",
			PgBouncerKind, Kind, ViaPgBouncer)}
	}
	return nil
}
