package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/internal/yamlkeys"
)

// Params are one step's fault parameters. Each fault declares its own
// params struct in its file (Fault.Params returns a fresh one); its yaml
// tags are the keys a scenario step may give that fault, besides the
// step's own fault, at, for and on.
type Params interface {
	// String describes the params for the plan line ("process 0",
	// "servers [A B], topology cut"), or "" when none is set.
	String() string
	// Validate checks the params against the run's shape. An error about
	// one key is a *stepKeyError, so a scenario file can point at its line.
	Validate(shape Shape) error
}

// Shape is what a fault may ask of a run before it starts.
type Shape struct {
	// Clients is the number of client processes.
	Clients int
	// Backend names the lock under test (for messages).
	Backend string
	// Kinds are the kinds of server the backend runs (the kinds'
	// names: cluster.KindNames); none for an in-process lock.
	Kinds []string
	// Lease is set when the backend's grants carry a lease.
	Lease bool
	// Sentinel is set when Redis runs as a Sentinel group (a primary, a
	// replica and Sentinels).
	Sentinel bool
	// External is set when the servers are someone else's (servers:
	// external): only the clients' own links can be cut or delayed.
	External bool
	// Members is the size of the backend's ensemble when its members
	// talk to one another through links that faults can cut or slow (a
	// ZooKeeper ensemble of more than one member the harness runs); 0
	// when there is none.
	Members int
	// Uncontrolled names the servers a fault cannot act on: external
	// servers the servers file gives no control for ("redis 10.0.0.5:6379").
	Uncontrolled []string
}

// controlled refuses a fault done to whole servers when some of the run's
// servers are someone else's and cannot be controlled.
func (s Shape) controlled(fault string) error {
	if len(s.Uncontrolled) == 0 {
		return nil
	}
	return fmt.Errorf("%s does not apply: the servers are someone else's and the servers file gives no control for %s (add control: docker and container: NAME to let server faults reach them)", fault, strings.Join(s.Uncontrolled, ", "))
}

// stepKeyError is a problem with one key of a step ("process", "on"), so that
// a scenario file can point at the key's line; Key "" is the step as a
// whole.
type stepKeyError struct {
	// Key is the step's key, or "".
	Key string
	// Err is the problem.
	Err error
}

func (e *stepKeyError) Error() string { return e.Err.Error() }
func (e *stepKeyError) Unwrap() error { return e.Err }

// keyErr is a *stepKeyError about key that wraps ErrTarget (without saying
// so: the message is for a scenario's author).
func keyErr(key, format string, a ...any) error {
	return &stepKeyError{Key: key, Err: targetError(fmt.Sprintf(format, a...))}
}

// targetError is a message that is ErrTarget.
type targetError string

func (e targetError) Error() string { return string(e) }
func (e targetError) Unwrap() error { return ErrTarget }

// ErrorKey returns the key an error is about, or "" when it names none.
func ErrorKey(err error) string {
	var ke *stepKeyError
	if errors.As(err, &ke) {
		return ke.Key
	}
	return ""
}

// DecodeParams decodes a step's fault keys (a YAML mapping of every key
// but fault, at, for and on) into the named fault's fresh params,
// strictly: a key the fault does not take is refused, naming the keys it
// does take. Errors begin "line N: ", as yaml's own do.
func DecodeParams(fault string, keys *yaml.Node) (Params, error) {
	f, err := Lookup(fault)
	if err != nil {
		return nil, err
	}
	p := f.Params()
	takes := Keys(p)
	for i := 0; i+1 < len(keys.Content); i += 2 {
		if k := keys.Content[i]; !slices.Contains(takes, k.Value) {
			return nil, fmt.Errorf("line %d: %s takes no %q (it takes: %s)", k.Line, fault, k.Value, strings.Join(takes, ", "))
		}
	}
	if err := keys.Decode(p); err != nil {
		return nil, err
	}
	return p, nil
}

// Keys lists the keys a params value takes, from its yaml tags.
func Keys(p Params) []string { return yamlkeys.Of(p) }

// Proc is the `process:` key of a fault's params: one client process,
// which is also the client whose `on:` event fires the step (with no
// process, any client's does).
type Proc struct {
	// Process is a client process, from 0; nil is none.
	Process *int `yaml:"process,omitempty"`
}

// EventProcess is the client whose event fires the step, or -1 for any.
func (p Proc) EventProcess() int {
	if p.Process == nil {
		return -1
	}
	return *p.Process
}

func (p Proc) validate(clients int) error {
	if p.Process != nil && (*p.Process < 0 || *p.Process >= clients) {
		return keyErr("process", "no client process %d (clients are 0 to %d)", *p.Process, clients-1)
	}
	return nil
}

func (p Proc) words() string {
	if p.Process == nil {
		return ""
	}
	return fmt.Sprintf("process %d", *p.Process)
}

// ClientSet is the `process:` and `clients:` keys of a fault's params:
// the client processes it hits.
type ClientSet struct {
	Proc `yaml:",inline"`
	// Clients are more client processes.
	Clients []int `yaml:"clients,omitempty"`
}

// List returns Process and Clients together, without duplicates.
func (c ClientSet) List() []int {
	var out []int
	seen := map[int]bool{}
	add := func(p int) {
		if p >= 0 && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	add(c.EventProcess())
	for _, p := range c.Clients {
		add(p)
	}
	return out
}

func (c ClientSet) validate(clients int) error {
	if err := c.Proc.validate(clients); err != nil {
		return err
	}
	for _, p := range c.Clients {
		if p < 0 || p >= clients {
			return keyErr("clients", "no client process %d (clients are 0 to %d)", p, clients-1)
		}
	}
	return nil
}

func (c ClientSet) words() string {
	switch cs := c.List(); len(cs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("process %d", cs[0])
	default:
		return fmt.Sprintf("processes %v", cs)
	}
}

// ServerSet is the `servers:` key of a fault's params.
type ServerSet struct {
	// Servers name servers: a name ("redis-2") or a letter ("A" is the
	// first server started, "B" the second, ...).
	Servers []string `yaml:"servers,omitempty"`
}

// ServerNames returns the servers named, for checking once they are up.
func (s ServerSet) ServerNames() []string { return s.Servers }

// validate checks the form of the names (they can only be matched once
// the servers are up).
func (s ServerSet) validate() error {
	for _, n := range s.Servers {
		if strings.TrimSpace(n) == "" {
			return keyErr("servers", "empty server name")
		}
	}
	return nil
}

func (s ServerSet) words() string {
	if len(s.Servers) == 0 {
		return ""
	}
	return fmt.Sprintf("servers %v", s.Servers)
}

// Duration is a time.Duration in a fault's params, written as YAML
// writes it: "1s", "250ms", "-2s" (a bare 0 is zero).
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML parses "1s"-style durations, naming the line when it fails.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if n.Value == "0" {
		v, err = 0, nil
	}
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: bad duration %q (want e.g. 500ms, 2.5s, -1s)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// words joins the set parts of a plan line.
func words(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// word is "name value", or "" when value is unset.
func word(name, value string) string {
	if value == "" {
		return ""
	}
	return name + " " + value
}

// durWord is "name 1s", or "" for zero.
func durWord(name string, d Duration) string {
	if d == 0 {
		return ""
	}
	return name + " " + d.String()
}
