package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	errUnknown := errors.New("unknown thing")
	r := New[int](errUnknown)
	r.Add("b", 2)
	r.Add("a", 1)
	if v, err := r.Get("a"); err != nil || v != 1 {
		t.Errorf("Get(a) = %d, %v", v, err)
	}
	_, err := r.Get("zz")
	if !errors.Is(err, errUnknown) || !strings.Contains(err.Error(), `"zz" (known: a, b)`) {
		t.Errorf("Get(zz): %v", err)
	}
	if got := r.All(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("All: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a duplicate name did not panic")
		}
	}()
	r.Add("a", 3)
}
