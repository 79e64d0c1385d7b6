// Package nightly holds the test that runs the nightly workflow's matrix job
// (.github/workflows/nightly.yml) as its runner would: its own run steps, in
// order, in a bare Debian container built without a registry (scripts/images.sh
// with BARE=1), narrowed to one cell of every server kind; and the test that
// the sharded jobs (compare, versions) take their shard, upload their stores
// and are merged. It has no code of its own.
package nightly
