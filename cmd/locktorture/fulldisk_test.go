package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/matrix"
)

// TestFullDiskPrintsOnlyWhatWasWritten: a matrix or comparison whose
// report files cannot all be written (here a merge of two synthetic
// shards, the built binary run under a file size limit, as a full disk
// fails its writes) prints the path of each file it wrote and of none it
// did not, says on one line which failed and why, and exits 255. It
// printed report:, png: and junit: paths it never wrote. The lines are
// printMatrix's and printCompare's, which matrix and compare print too.
func TestFullDiskPrintsOnlyWhatWasWritten(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash to set a file size limit with")
	}
	for _, tc := range []struct {
		name    string
		compare bool
		limitKB string
		printed []string // labels printed: their files were written
		absent  []string // labels not printed: their files were not
		failed  []string // files the one stderr line names
	}{
		{"matrix, the plots and pages too big", false, "4", []string{"matrix:", "junit:"}, []string{"report:"}, []string{"index.html", "matrix.png"}},
		{"compare, the plots and pages too big", true, "4", []string{"matrix:", "report:", "junit:"}, []string{"png:"}, []string{"compare.png", "index.html", "matrix.png"}},
		{"matrix, nothing fits", false, "2", []string{"matrix:"}, []string{"report:", "junit:"}, []string{"results.json"}},
		{"compare, nothing fits", true, "2", []string{"matrix:"}, []string{"report:", "junit:", "png:"}, []string{"results.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := writeShards(t, func(m *matrix.Matrix) { m.Compare = tc.compare })
			if tc.compare {
				m, err := matrix.Read(dirs[1])
				if err != nil {
					t.Fatal(err)
				}
				m.Compare = true
				if err := matrix.Write(dirs[1], m); err != nil {
					t.Fatal(err)
				}
			}
			store := t.TempDir()
			cmd := exec.Command("bash", append([]string{"-c", `ulimit -f ` + tc.limitKB + `; exec "$0" "$@"`, binPath, "merge", "--store", store}, dirs...)...)
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitHarness {
				t.Fatalf("exit %v, want %d\n%s\n%s", err, exitHarness, out.String(), errb.String())
			}
			stdout, stderr := out.String(), errb.String()
			for _, l := range tc.printed {
				if !strings.Contains(stdout, "\n"+l) {
					t.Errorf("stdout lacks %s:\n%s", l, stdout)
				}
			}
			for _, l := range tc.absent {
				if strings.Contains(stdout, "\n"+l) {
					t.Errorf("stdout prints %s for a file never written:\n%s", l, stdout)
				}
			}
			// Every path printed is there.
			for _, line := range strings.Split(stdout, "\n") {
				label, p, ok := strings.Cut(line, ":")
				if p = strings.TrimSpace(p); !ok || !filepath.IsAbs(p) || strings.Contains(label, " ") {
					continue
				}
				if _, err := os.Stat(p); err != nil {
					t.Errorf("%s: printed, but %v", label, err)
				}
			}
			oneLine(t, stderr, "locktorture merge: ", "file too large")
			for _, f := range tc.failed {
				if !strings.Contains(stderr, f) {
					t.Errorf("stderr does not say %s failed: %s", f, stderr)
				}
			}
		})
	}
}
