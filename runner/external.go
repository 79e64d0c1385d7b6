package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/cluster/external"
	_ "github.com/locktorture/locktorture/cluster/kinds/all"
	"github.com/locktorture/locktorture/cluster/kinds/mariadb"
	"github.com/locktorture/locktorture/cluster/kinds/postgres"
	"github.com/locktorture/locktorture/internal/journal"
	"github.com/locktorture/locktorture/internal/owner"
)

// An external run (servers: external) uses servers someone else runs,
// named in a servers file. Before anything is written it reads the file
// (a bad one is bad input) and refuses faults the file gives no control
// for; before clients start it asks every server whether it answers and
// is what the file says; and whatever ends the run, it removes exactly
// what the run made there (external.Cleanup).

// loadServersFile reads an external run's servers file and tells the
// scenario which servers faults cannot act on, so that validation refuses
// such faults before the run.
func (r *run) loadServersFile() error {
	if r.sc.Servers != cluster.ServersExternal {
		return nil
	}
	f, err := cluster.LoadServersFile(r.sc.ServersFile)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	r.serversFile = f
	if r.sc.Redis != backends.RedisSentinel {
		for kind, n := range r.binfo.Counts {
			if got := len(f.ServerSet().Addrs(kind)); got < n {
				return fmt.Errorf("%w: %s needs %d %s servers, but %s names %d", ErrBadInput, r.sc.Backend, n, kind, r.sc.ServersFile, got)
			}
		}
	}
	r.sc.Uncontrolled = f.Uncontrolled(r.sc.ServerKinds(), r.sc.Redis == backends.RedisSentinel)
	return nil
}

// externalCluster checks the servers, makes the run's namespace on them,
// and returns a cluster that hands them out. Cleanup of the namespace is
// left to the run's cleanup (on success, error, interrupt and panic).
func (r *run) externalCluster(ctx context.Context) (*cluster.Cluster, error) {
	f, kinds := r.serversFile, r.sc.ServerKinds()
	if err := f.Check(ctx, kinds, r.sc.Redis == backends.RedisSentinel); err != nil {
		return nil, err
	}
	j, err := r.openJournal()
	if err != nil {
		return nil, err
	}
	ns := external.NewNamespace()
	// The namespace is journaled before anything is written in it: the
	// run's guard, or a later run, removes it if this harness dies first.
	file, _ := filepath.Abs(r.sc.ServersFile)
	cleaned, err := j.Add(external.NamespaceUndo(file, ns, kinds))
	if err != nil {
		return nil, err
	}
	r.deferClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := external.Cleanup(ctx, f, ns, kinds); err != nil {
			r.lg.Printf("external servers: %v", err)
			return
		}
		cleaned()
		r.lg.Printf("external servers: removed the run's keys and schema (namespace %s)", ns)
	})
	g, err := external.Prepare(ctx, f, ns, kinds)
	if err != nil {
		return nil, err
	}
	g.Journal = j
	r.sc.KeyPrefix = ns + ":"
	r.lg.Printf("external servers: namespace %s: keys %sk0...", ns, r.sc.KeyPrefix)
	if slices.Contains(kinds, postgres.Kind) {
		r.lg.Printf("external servers: PostgreSQL schema %s", postgres.Schema(ns))
	}
	if slices.Contains(kinds, mariadb.Kind) {
		r.lg.Printf("external servers: MariaDB database %s", mariadb.DatabaseOf(ns))
	}
	return cluster.NewExternal(g), nil
}

// openJournal makes the run's journal of what it does to servers it does
// not own, and starts its guard: this program again, in a session of its
// own, which undoes whatever the journal still holds if this harness dies
// first (kill -9 included). At the run's end, after every undo, the
// journal is closed (and removed) and the guard told to go.
func (r *run) openJournal() (*journal.Journal, error) {
	ownerID, err := owner.ID()
	if err != nil {
		return nil, err
	}
	j, err := journal.Create(journal.Dir(), ownerID, r.dir)
	if err != nil {
		return nil, err
	}
	stop := func() {}
	if exe, err := os.Executable(); err == nil {
		if s, err := journal.StartGuard(j, exe); err == nil {
			stop = s
		} else {
			r.lg.Printf("journal: no guard (%v): a later run undoes what this one leaves", err)
		}
	}
	r.deferClose(func() {
		if err := j.Close(); err != nil {
			r.lg.Printf("%v", err)
		}
		stop()
	})
	r.lg.Printf("journal %s: what this run does to servers it does not own, undone by its guard if it dies", j.Path())
	return j, nil
}
