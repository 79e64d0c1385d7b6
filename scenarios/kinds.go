package scenarios

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
)

// The kinds' own settings: a block per kind of server, keyed by the
// kind's name (`etcd: {members: 3}`, `postgres: {via: pgbouncer}`), each
// decoded strictly by its kind (cluster.DecodeKindOptions) as
// backend_options blocks are by their backends. A kind's older top-level
// keys (etcd_members; cluster.OlderSpelled) are still read, as the key
// of its block they stand for.

// scenarioFile is a scenario as its file is decoded: the Scenario's own
// keys, and the rest (the kinds' blocks, their older spellings, unknown
// keys) for readKinds.
type scenarioFile struct {
	Scenario `yaml:",inline"`
	Rest     map[string]yaml.Node `yaml:",inline"`
}

// olderKey is the kind and block key a top-level key of an older spelling
// stands for.
func olderKey(name string) (kind, key string, ok bool) {
	for _, k := range cluster.Kinds() {
		o, spelled := k.Abilities.(cluster.OlderSpelled)
		if !spelled {
			continue
		}
		if key, ok := o.OlderKeys()[name]; ok {
			return k.Name, key, true
		}
	}
	return "", "", false
}

// olderPair is a top-level key of an older spelling and its value.
type olderPair struct {
	key, value *yaml.Node
	// blockKey is the key of the kind's block it stands for.
	blockKey string
}

// readKinds decodes the kinds' blocks among the file's top-level keys
// that are not the Scenario's own (rest), with their older spellings
// merged in, and checks each (Check). Errors begin "line N: ", as yaml's
// own do; a key that is neither is refused as unknown.
func (s *Scenario) readKinds(root *yaml.Node, rest map[string]yaml.Node) error {
	m := root
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode || len(rest) == 0 {
		return nil
	}
	var order []string
	blocks := map[string]*yaml.Node{}
	older := map[string][]olderPair{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if _, ok := rest[k.Value]; !ok {
			continue // one of the Scenario's own keys
		}
		kind, blockKey, isOlder := olderKey(k.Value)
		switch _, isKind := cluster.LookupKind(k.Value); {
		case isOlder:
			older[kind] = append(older[kind], olderPair{key: k, value: v, blockKey: blockKey})
		case isKind:
			kind = k.Value
			blocks[kind] = v
		default:
			// As the strict decoder words it (located explains it).
			return fmt.Errorf("line %d: field %s not found in type scenarios.Scenario", k.Line, k.Value)
		}
		if !slices.Contains(order, kind) {
			order = append(order, kind)
		}
	}
	for _, kind := range order {
		n, spelled, err := mergeOlder(kind, blocks[kind], older[kind])
		if err != nil {
			return err
		}
		o, err := cluster.DecodeKindOptions(kind, n)
		if err != nil {
			return err
		}
		if o == nil {
			continue
		}
		if err := o.Check(); err != nil {
			line, written := n.Line, ""
			if ke, ok := err.(*cluster.KeyError); ok {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == ke.Key {
						line = n.Content[i].Line
					}
				}
				if old, ok := spelled[ke.Key]; ok && old != ke.Key {
					written = " (the file writes it " + old + ")"
				}
			}
			return fmt.Errorf("line %d: %s: %w%s", line, kind, err, written)
		}
		s.SetKindOptions(kind, o)
	}
	return nil
}

// mergeOlder is kind's block with the keys its older spelling gave
// added (spelled maps each such block key to the older key), refusing a
// setting given both ways.
func mergeOlder(kind string, block *yaml.Node, pairs []olderPair) (*yaml.Node, map[string]string, error) {
	if len(pairs) == 0 {
		return block, nil, nil
	}
	merged := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: pairs[0].key.Line, Column: pairs[0].key.Column}
	if block != nil && !(block.Kind == yaml.ScalarNode && block.Tag == "!!null") {
		if block.Kind != yaml.MappingNode {
			return block, nil, nil // its decoding says what is wrong
		}
		merged.Content = slices.Clone(block.Content)
		merged.Line, merged.Column = block.Line, block.Column
	}
	spelled := map[string]string{}
	for _, p := range pairs {
		for i := 0; i+1 < len(merged.Content); i += 2 {
			if k := merged.Content[i]; k.Value == p.blockKey {
				return nil, nil, fmt.Errorf("line %d: %s is the older spelling of %s: {%s: ...}, which the file gives too (line %d): give it once, as %s: {%s: %s}",
					p.key.Line, p.key.Value, kind, p.blockKey, k.Line, kind, p.blockKey, p.value.Value)
			}
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p.blockKey, Line: p.key.Line, Column: p.key.Column}
		merged.Content = append(merged.Content, key, p.value)
		spelled[p.blockKey] = p.key.Value
	}
	return merged, spelled, nil
}

// kindLine is the line of kind's key in the file: in its block, or under
// its older spelling; key "" is the block itself, or its first older key.
// 0 when the file gives neither.
func kindLine(root *yaml.Node, kind, key string) int {
	m := root
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = m.Content[0]
	}
	if m.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Value == kind {
			if key == "" || v.Kind != yaml.MappingNode {
				return k.Line
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if v.Content[j].Value == key {
					return v.Content[j].Line
				}
			}
		}
		if oKind, bk, isOlder := olderKey(k.Value); isOlder && oKind == kind && (key == "" || bk == key) {
			return k.Line
		}
	}
	return 0
}

// SetKindOptions sets kind's own settings (what its block in a file
// gives: &zookeeper.Options{Ensemble: cluster.Ensemble{Members: 3}}) on a copy of the map,
// so that a copy of the scenario keeps its own.
func (s *Scenario) SetKindOptions(kind string, o cluster.KindOptions) {
	k := maps.Clone(s.Kinds)
	if k == nil {
		k = map[string]cluster.KindOptions{}
	}
	k[kind] = o
	s.Kinds = k
}

// fillKinds gives each kind the run uses that takes settings its
// defaults when the file gives it no block, so the effective scenario
// shows them.
func (s *Scenario) fillKinds() {
	for _, name := range s.ServerKinds() {
		if _, ok := s.Kinds[name]; ok {
			continue
		}
		if o, err := cluster.DecodeKindOptions(name, nil); err == nil && o != nil {
			s.SetKindOptions(name, o)
		}
	}
}

// validateKinds checks each kind's settings: the kind's own Check, then
// the kinds' rules about the run (checkRun: the pooler in front of
// PostgreSQL).
func (s *Scenario) validateKinds() error {
	for _, name := range sortedKeys(s.Kinds) {
		k, ok := cluster.LookupKind(name)
		c, configurable := k.Abilities.(cluster.Configurable)
		switch {
		case !ok:
			return &fieldError{field: name, msg: fmt.Sprintf("%s: no kind of server of that name (known: %s)", name, strings.Join(cluster.KindNames(), ", "))}
		case !configurable:
			return &fieldError{field: name, msg: fmt.Sprintf("%s takes no settings in a scenario", name)}
		case reflect.TypeOf(s.Kinds[name]) != reflect.TypeOf(c.Options()):
			return &fieldError{field: name, msg: fmt.Sprintf("%s: settings of type %T, not %T", name, s.Kinds[name], c.Options())}
		}
		if err := s.Kinds[name].Check(); err != nil {
			fe := &fieldError{field: name, msg: fmt.Sprintf("%s: %v", name, err)}
			if ke, ok := err.(*cluster.KeyError); ok {
				fe.path = []string{ke.Key}
			}
			return fe
		}
	}
	return s.checkRun()
}

// RunView is what the kinds' rules about the run as a whole see of it
// (cluster.RunChecker, cluster.Refuser).
func (s *Scenario) RunView() cluster.RunView {
	info, _, _ := backends.Lookup(s.Backend)
	return cluster.RunView{
		Backend: s.Backend, Resource: s.Resource,
		Kinds:   s.serverKinds(info),
		Start:   s.StartOptions(),
		Servers: s.Servers, Images: s.Images,
		RedisProgram:  s.RedisProgram,
		TLS:           s.Security == SecurityTLS,
		BackendTables: info.Tables, BackendInTx: info.InTx,
	}
}

// checkRun checks the kinds' rules about the run as a whole (each
// cluster.RunChecker's, in the order of the kinds' names: PgBouncer's
// about postgres: {via: pgbouncer} and its own block).
func (s *Scenario) checkRun() error {
	r := s.RunView()
	for _, k := range cluster.Kinds() {
		c, ok := k.Abilities.(cluster.RunChecker)
		if !ok {
			continue
		}
		err := c.CheckRun(r)
		var be *cluster.BlockError
		switch {
		case err == nil:
			continue
		case errors.As(err, &be):
			fe := &fieldError{field: be.Kind, msg: be.Msg}
			if be.Key != "" {
				fe.path = []string{be.Key}
			}
			return fe
		default:
			return &fieldError{field: k.Name, msg: err.Error()}
		}
	}
	return nil
}

// members is the size of kind's ensemble the run asks for: 1 when it
// asks none.
func (s *Scenario) members(kind string) int {
	if o, ok := s.Kinds[kind].(cluster.EnsembleOptions); ok && o.Size() > 0 {
		return o.Size()
	}
	return 1
}

// Ensemble reports whether the run asks a kind for an ensemble of more
// than one member (zookeeper: {members: 3}).
func (s *Scenario) Ensemble() bool {
	for k := range s.Kinds {
		if s.members(k) > 1 {
			return true
		}
	}
	return false
}

// DefaultServers reports whether every kind's settings are its defaults
// (what its block left out gives): one member, no server settings, no
// pooler.
func (s *Scenario) DefaultServers() bool {
	for name, o := range s.Kinds {
		if d, err := cluster.DecodeKindOptions(name, nil); err != nil || !reflect.DeepEqual(o, d) {
			return false
		}
	}
	return true
}

// kindBlocks are the kinds' blocks of the effective scenario, in the
// order of the kinds' names: key and value nodes, for Marshal.
func (s *Scenario) kindBlocks() ([]*yaml.Node, error) {
	var out []*yaml.Node
	for _, name := range sortedKeys(s.Kinds) {
		var v yaml.Node
		if err := v.Encode(s.Kinds[name]); err != nil {
			return nil, fmt.Errorf("scenarios: encode the settings of %s: %w", name, err)
		}
		out = append(out, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, &v)
	}
	return out, nil
}

// keysAfterKinds are the Scenario's keys whose fields follow Kinds: the
// kinds' blocks are written before them, where Kinds stands.
func keysAfterKinds() []string {
	t := reflect.TypeOf(Scenario{})
	f, _ := t.FieldByName("Kinds")
	var out []string
	for i := f.Index[0] + 1; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
