package scenarios

import "github.com/locktorture/locktorture/internal/duration"

// Duration is a time.Duration written as "1s", "250ms" in YAML (a bare 0
// too; a negative one is refused): the scenario's durations and those of
// the kinds' settings blocks are the one type.
type Duration = duration.Duration
