package scenarios_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/scenarios"
)

// TestProgramCannotJoinTheTransaction: a scenario about a lock whose
// grant is a transaction the resource's writes join (suits: needs in-tx:
// pg-terminate-xact) cannot run a program's lock — the harness's writes
// would be made outside the program's transaction, and judged as if they
// were inside — so it is refused before the run, as docs/client-protocol.md
// says, whether the program comes from --exec or the file.
func TestProgramCannotJoinTheTransaction(t *testing.T) {
	const says = "writes inside the lock's own transaction"
	t.Run("--exec", func(t *testing.T) {
		sc, err := scenarios.Builtin("pg-terminate-xact")
		if err != nil {
			t.Fatal(err)
		}
		err = sc.Apply(scenarios.Overrides{Exec: ptrTo("/usr/bin/node lock.js")})
		if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Fatalf("pg-terminate-xact --exec: %v, want a refusal saying %q", err, says)
		}
	})
	t.Run("file", func(t *testing.T) {
		in := "name: x\nbackend: exec\nexec: {command: [/usr/bin/node, lock.js], servers: [postgres]}\nsuits: {needs: [in-tx]}\nresource: postgres\n"
		_, err := scenarios.Parse([]byte(in), "f.yaml")
		if !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), says) {
			t.Fatalf("%v, want a refusal saying %q", err, says)
		}
	})
	t.Run("a built-in backend still runs it", func(t *testing.T) {
		sc, err := scenarios.Builtin("pg-terminate-xact")
		if err != nil {
			t.Fatal(err)
		}
		if err := sc.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

func ptrTo[T any](v T) *T { return &v }
