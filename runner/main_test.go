package runner

import (
	"os"
	"testing"
)

// TestMain stops the servers the package's tests share. With
// LT_TEST_ADAPTER set, the test binary is a test child instead: an adapter
// speaking the client protocol.
func TestMain(m *testing.M) {
	switch mode := os.Getenv(adapterEnv); mode {
	case "ignore-auth":
		ignoreAuthAdapter()
		os.Exit(0)
	case adapterRenewHang, adapterRenewOpen:
		renewAdapter(mode)
		os.Exit(0)
	}
	code := m.Run()
	stopSharedMariaDB()
	stopSecured()
	os.Exit(code)
}
