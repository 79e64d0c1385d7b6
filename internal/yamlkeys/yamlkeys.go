// Package yamlkeys lists the YAML keys a settings struct takes, from its
// yaml tags: what a fault's params, a backend's options and a kind's settings decode, named
// in the errors that refuse any other key.
package yamlkeys

import (
	"reflect"
	"slices"
	"strings"
)

// Of lists the keys of v's struct type (through pointers), inline structs
// included, in field order; nil when v is not a struct.
func Of(v any) []string {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	return of(t)
}

func of(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := []string{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case slices.Contains(strings.Split(opts, ","), "inline"):
			out = append(out, of(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			out = append(out, strings.ToLower(f.Name))
		default:
			out = append(out, name)
		}
	}
	return out
}
