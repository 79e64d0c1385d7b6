package checker

// Library names the third-party lock library a run's backend drives
// (results.json's library field): its package, the version the harness
// was built with (read at run time), and its language. It is a record for
// people and tools comparing runs; no checker reads it.
type Library struct {
	// Name is the package users import ("github.com/redis/rueidis/rueidislock").
	Name string `json:"name"`
	// Version is the library's version ("v1.0.79"; "unknown" when the
	// program could not tell).
	Version string `json:"version"`
	// Language is the library's language ("Go").
	Language string `json:"language"`
}
