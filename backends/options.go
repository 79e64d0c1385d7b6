package backends

import (
	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/internal/yamlkeys"
)

// Options are one backend's own settings: the scenario's
// `backend_options: {<backend>: {...}}` block, decoded strictly into the
// struct the backend's Info.Options returns. Its yaml tags are the keys the
// backend takes, as a fault's params struct names the keys a step takes;
// adding a setting to a backend is a field in its own file.
type Options interface {
	// Validate checks the options against the run's setup (Env.Redis,
	// Env.Clients, ...); Cluster and the other run-time fields are unset.
	Validate(env Env) error
}

// FreeOptions are the options of a backend that passes them on unread
// (exec hands them to its program in the open request): any keys.
type FreeOptions map[string]any

// Validate accepts anything: the program judges its own options.
func (FreeOptions) Validate(Env) error { return nil }

// DecodeOptions decodes node (a YAML mapping; nil when the scenario gives
// none) into backend's fresh options, strictly: a key the backend does not
// take is refused, naming those it takes. It returns nil for a backend
// that takes no options and was given none. Errors begin "line N: " when
// they are about one key, as yaml's own do.
func DecodeOptions(backend string, node *yaml.Node) (Options, error) {
	info, _, err := Lookup(backend)
	if err != nil {
		return nil, err
	}
	return yamlkeys.Decode(node, yamlkeys.Block{Owner: backend, Noun: "option", None: "takes no options"}, info.Options)
}

// OptionKeys lists the keys an options struct takes, from its yaml tags
// (inline structs included); nil for free options (a map).
func OptionKeys(o Options) []string { return yamlkeys.Of(o) }

// envOptions returns the run's options for a backend of options type T, or
// def when the run gives none (a backend built in Go, in a test).
func envOptions[T Options](env Env, def T) T {
	if o, ok := env.Options.(T); ok {
		return o
	}
	return def
}
