// Package doccheck holds tests of the user documentation: every relative
// link in README.md, CONTRIBUTING.md and docs/*.md resolves (the file
// exists; an #anchor names a heading of the target, by GitHub's slug
// rules), and README.md stays a front page. It has no code of its own.
package doccheck
