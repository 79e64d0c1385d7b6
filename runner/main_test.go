package runner

import (
	"os"
	"testing"
)

// TestMain stops the servers the package's tests share.
func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedMariaDB()
	stopSecured()
	os.Exit(code)
}
