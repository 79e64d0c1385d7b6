package findings

// bisected records, by finding id, the first library version at which the
// finding reproduces, as `locktorture bisect` found it (docs/findings.md
// has each table): the version, and how it was found.
var bisected = map[string][2]string{}

// FirstVersion returns the first version at which the finding reproduces
// and how that was found, or "", "" when it was not bisected.
func FirstVersion(id string) (version, how string) {
	b := bisected[id]
	return b[0], b[1]
}
