package scenarios

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
)

// Overrides are command-line settings that replace a scenario's own. A
// nil field is not set; a set one replaces the scenario's value as it is,
// zero included (--hold 0s is no work at all). Apply refuses a value the
// scenario file could not hold: --ttl 0s, --hold -1s.
type Overrides struct {
	// Backend, Resource and Fencing name the lock, the protected resource
	// and its fencing mode.
	Backend, Resource, Fencing *string
	// Clients and Keys are the numbers of client processes and lock keys.
	Clients, Keys *int
	// TTL, Hold, Duration and Timeout: the lease, the work inside the
	// critical section, the clients' run time and each request's timeout.
	TTL, Hold, Duration, Timeout *time.Duration
	// Seed seeds the clients and the faults.
	Seed *int64
	// Nemesis replaces the plan: "none", or a comma-separated random mix.
	Nemesis *string
	// NemesisInterval is the mean time between random faults.
	NemesisInterval *time.Duration
	// ClientMode is inproc or process.
	ClientMode *string
	// Exec is a command line (split as a shell splits plain and quoted
	// words): the run's backend becomes exec, running it.
	Exec *string
	// ExecServers are the servers the exec backend's program gets, one
	// entry per server (--exec-servers redis*5,postgres: backends.ParseServers);
	// they replace exec.servers.
	ExecServers []string
	// Servers is where the servers run (--servers local|docker|external).
	Servers *string
	// ServersFile names an external run's servers (--servers-file).
	ServersFile *string
	// Images are --image KIND=REF settings, over the scenario's images.
	Images map[string]string
	// TLS is --tls: security: tls.
	TLS bool
	// RedisProgram is --redis-program redis|valkey.
	RedisProgram *string
}

// Apply sets the overrides on s and validates the result. An error wraps
// ErrInvalid and names the flag: "invalid scenario: --hold: ...".
func (s *Scenario) Apply(o Overrides) error {
	if o.NemesisInterval != nil && *o.NemesisInterval <= 0 {
		return fmt.Errorf("%w: --nemesis-interval: must be positive, not %s", ErrInvalid, *o.NemesisInterval)
	}
	if o.Exec != nil {
		// Flags that contradict --exec are refused: the lock that runs
		// must be the one the user named.
		if o.Backend != nil && *o.Backend != ExecBackend {
			return fmt.Errorf("%w: --exec runs your program as backend exec, but --backend %s names the built-in %s lock: give one or the other", ErrInvalid, *o.Backend, *o.Backend)
		}
		if o.ClientMode != nil && *o.ClientMode == ClientInproc {
			return fmt.Errorf("%w: --exec runs your program as a process per client, but --client-mode %s asks for goroutines of the harness: give one or the other", ErrInvalid, ClientInproc)
		}
		argv, err := splitCommand(*o.Exec)
		if err != nil {
			return fmt.Errorf("--exec: %w", err)
		}
		if s.Exec == nil {
			s.Exec = &Exec{}
		}
		if s.Backend != ExecBackend && len(s.Exec.Servers) == 0 {
			// The scenario is about its own backend's servers (zk-pause:
			// a ZooKeeper ensemble): the program gets those.
			s.Exec.Servers = ownServers(s.Backend)
		}
		s.Exec.Command = argv
		if o.Backend == nil {
			exec := ExecBackend
			o.Backend = &exec
		}
	}
	if o.ExecServers != nil {
		if s.Exec == nil || (o.Backend != nil && *o.Backend != ExecBackend) || (o.Backend == nil && s.Backend != ExecBackend) {
			return fmt.Errorf("%w: --exec-servers names the servers of a program of yours (--exec, or backend exec), and this run runs none", ErrInvalid)
		}
		s.Exec.Servers = slices.Clone(o.ExecServers)
	}
	if o.Backend != nil {
		s.Backend = *o.Backend
		s.fillOptions()
	}
	if o.Resource != nil {
		s.Resource = *o.Resource
	} else if o.Backend != nil {
		s.Resource = suitedResource(s.Backend, s.Resource)
	}
	if o.Fencing != nil {
		s.Fencing = *o.Fencing
	}
	if o.Clients != nil {
		s.Clients = *o.Clients
	}
	if o.Keys != nil {
		s.Keys = *o.Keys
	}
	if o.TTL != nil {
		s.TTL = Duration(*o.TTL)
	}
	if o.Hold != nil {
		s.Hold = Duration(*o.Hold)
	}
	if o.Duration != nil {
		s.Duration = Duration(*o.Duration)
	}
	if o.Timeout != nil {
		s.Timeout = Duration(*o.Timeout)
	}
	if o.Seed != nil {
		s.Seed = *o.Seed
	}
	if o.ClientMode != nil {
		s.ClientMode = *o.ClientMode
	}
	if o.Nemesis != nil {
		s.Nemesis = Nemesis{}
		if n := strings.TrimSpace(*o.Nemesis); n != "" && n != "none" {
			r := &Random{Interval: Duration(2 * time.Second), Min: Duration(500 * time.Millisecond), Max: Duration(2 * time.Second)}
			for _, f := range strings.Split(n, ",") {
				r.Faults = append(r.Faults, strings.TrimSpace(f))
			}
			s.Nemesis.Random = r
		}
	}
	if o.Servers != nil {
		s.Servers = *o.Servers
	}
	if o.ServersFile != nil {
		s.ServersFile = *o.ServersFile
	}
	if o.TLS {
		s.Security = SecurityTLS
	}
	for k, v := range o.Images {
		if s.Images == nil {
			s.Images = map[string]string{}
		}
		s.Images[k] = v
	}
	if o.RedisProgram != nil {
		s.RedisProgram = *o.RedisProgram
	}
	if o.NemesisInterval != nil && s.Nemesis.Random != nil {
		s.Nemesis.Random.Interval = Duration(*o.NemesisInterval)
	}
	s.programDefaults()
	s.fillKinds()
	if err := s.Validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			if _, isKind := cluster.LookupKind(fe.field); isKind {
				// A kind's block, which no flag sets: its message says
				// what the flags made of it.
				return fmt.Errorf("%w: %s", ErrInvalid, fe.msg)
			}
			flag := strings.ReplaceAll(fe.field, "_", "-")
			switch flag {
			case "images":
				flag = "image"
			case "security":
				flag = "tls"
			}
			return fmt.Errorf("%w: --%s: %s", ErrInvalid, flag, fe.msg)
		}
		return err
	}
	return nil
}

// ownServers lists, as exec.servers does (one entry per server), the
// servers a built-in backend runs: redlock's five Redis, zookeeper's
// ensemble. Nil for an unknown backend (exec's default then applies).
func ownServers(backend string) []string {
	info, _, err := backends.Lookup(backend)
	if err != nil {
		return nil
	}
	return info.ServerList()
}
