package scenarios

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/locktorture/locktorture/cluster"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

var yamlLine = regexp.MustCompile(`line (\d+): `)

// Parse reads a scenario from data; source names it in errors ("x.yaml").
// Errors read "source:line: problem" and wrap ErrInvalid. A file over
// 1 MiB, or past the limits on its mappings and lists, is refused before it
// is decoded. A field the file leaves out (or gives no value: "hold:")
// takes its default; one it gives a zero keeps it, or is refused where
// zero means nothing (ttl: 0s).
func Parse(data []byte, source string) (*Scenario, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s:1: %w: the file is over the 1 MiB limit (%d bytes)", source, ErrInvalid, len(data))
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, located(source, err)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s:1: %w: the file is empty", source, ErrInvalid)
	}
	if err := checkSizes(&root); err != nil {
		var se *sizeError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s:%d: %w: %s", source, se.line, ErrInvalid, se.msg)
		}
		return nil, fmt.Errorf("%s:1: %w: %w", source, ErrInvalid, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f scenarioFile
	if err := dec.Decode(&f); err != nil {
		return nil, located(source, err)
	}
	s := f.Scenario
	if err := s.readKinds(&root, f.Rest); err != nil {
		return nil, located(source, err)
	}
	given := givenFields(&root)
	s.applyDefaults(given)
	err := s.checkGiven(given)
	if err == nil {
		err = s.Validate()
	}
	if err != nil {
		var fe *fieldError
		line := 1
		if errors.As(err, &fe) {
			line = lineOf(&root, append([]string{fe.field}, fe.path...))
			if _, isKind := cluster.LookupKind(fe.field); isKind {
				// A kind's block, or its older spelling.
				key := ""
				if len(fe.path) > 0 {
					key = fe.path[0]
				}
				if l := kindLine(&root, fe.field, key); l > 0 {
					line = l
				}
			}
		}
		return nil, fmt.Errorf("%s:%d: %w: %s", source, line, ErrInvalid, err.Error())
	}
	return &s, nil
}

// located turns a yaml error into "source:line: problem".
func located(source string, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimSpace(strings.SplitN(msg, "\n", 2)[0])
	line := "1"
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line = m[1]
		msg = strings.Replace(msg, m[0], "", 1)
	}
	if m := yamlUnknown.FindStringSubmatch(msg); m != nil && m[2] == "Scenario" && movedFields[m[1]] != "" {
		msg = fmt.Sprintf("%s is a backend's option now: %s", m[1], movedFields[m[1]])
	} else if m != nil {
		msg = fmt.Sprintf("unknown field %q%s", m[1], sectionNames[m[2]])
	} else if m := yamlType.FindStringSubmatch(msg); m != nil {
		got := fmt.Sprintf("%q", m[2])
		if m[2] == "" {
			got = map[string]string{"seq": "a list", "map": "a mapping"}[m[1]]
			if got == "" {
				got = "this value"
			}
		}
		msg = fmt.Sprintf("%s is not %s", got, typeNames(m[3]))
	}
	return fmt.Errorf("%s:%s: %w: %s", source, line, ErrInvalid, msg)
}

var (
	yamlUnknown = regexp.MustCompile(`field (\S+) not found in type scenarios\.(\w+)`)
	yamlType    = regexp.MustCompile("cannot unmarshal !!(\\w+) (?:`(.*)` )?into (\\S+)")
	// movedFields are top-level fields that became backends' options.
	movedFields = map[string]string{
		"fence_start":   "write backend_options: {redis-fenced: {fence_start: N}}",
		"wait_replicas": "write backend_options: {redis-token: {wait_replicas: N}} (redis-naive, redis-token, redis-fenced take it)",
	}
	// sectionNames says where an unknown field was found, by Go type.
	sectionNames = map[string]string{
		"Scenario":    "",
		"Random":      " in nemesis.random",
		"Nemesis":     " in nemesis (want script, random)",
		"Expectation": " in an expectation (want valid, checkers, why)",
		"Expect":      " in expect (want valid, checkers, why, backends, fenced)",
	}
)

// typeNames says in plain words what a Go type wants.
func typeNames(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list (write [a, b])"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "scenarios."):
		return "a mapping of settings"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a single value"
	}
	return "a " + goType
}

// lineOf finds the line of the deepest node on path (mapping keys, or
// sequence indexes as numbers) that exists, or 1.
func lineOf(root *yaml.Node, path []string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 1
	for _, p := range path {
		switch n.Kind {
		case yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line
			}
		case yaml.SequenceNode:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
		default:
			return line
		}
	}
	return line
}

// LoadFile reads and validates a scenario file. It reads no further than
// the 1 MiB limit.
func LoadFile(p string) (*Scenario, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s:1: %w: the file is over the 1 MiB limit", p, ErrInvalid)
	}
	s, err := Parse(data, p)
	if err == nil && s.ServersFile != "" && !filepath.IsAbs(s.ServersFile) {
		// A servers file beside the scenario file is found from anywhere.
		s.ServersFile = filepath.Join(filepath.Dir(p), s.ServersFile)
	}
	return s, err
}

// Builtin returns the built-in scenario with this name.
func Builtin(name string) (*Scenario, error) {
	data, err := builtinFS.ReadFile(path.Join("builtin", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrNotFound, name, strings.Join(BuiltinNames(), ", "))
	}
	return Parse(data, "builtin/"+name+".yaml")
}

// BuiltinNames lists the built-in scenarios.
func BuiltinNames() []string {
	ents, _ := fs.ReadDir(builtinFS, "builtin")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
