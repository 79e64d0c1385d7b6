package main

import (
	"flag"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/locktorture/locktorture/backends"
	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/reports"
	"github.com/locktorture/locktorture/runner"
	"github.com/locktorture/locktorture/scenarios"
)

func cmdCompare(args []string, stdout, stderr io.Writer) int {
	if libs, rest, ok := libraryArgs(args); ok {
		return cmdCompareLibrary(libs, rest, stdout, stderr) // libcompare.go
	}
	opt, f, remove, code, ok := compareOptions(args, stderr)
	if !ok {
		return code
	}
	defer remove()
	if *f.plan {
		return printPlan(opt, "compare", stdout, stderr)
	}
	return runMatrixCommand(opt, f, "compare", stdout, stderr, printCompare)
}

// compareOptions turns compare's arguments (without --library) into the
// matrix's options: the families' scenarios after the baseline, every
// built-in row unless --backends, the --exec rows (registered until
// remove is called: call it once done with opt), and the baseline's one
// short seed. false with the exit code when the arguments are bad (said
// on stderr) or asked for --help (printed).
func compareOptions(args []string, stderr io.Writer) (opt runner.MatrixOptions, f *matrixFlags, remove func(), code int, ok bool) {
	var removes []func()
	remove = func() {
		for _, r := range removes {
			r()
		}
	}
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f = defineMatrixFlags(fs, true)
	fs.String("library", "", libraryFlagUsage)
	fs.Usage = func() { compareUsage(fs, stderr) }
	if code, ok := parseArgs(fs, args, stderr); !ok {
		return opt, f, remove, code, false
	}
	opt, code, ok = f.options(fs, "compare", args, stderr)
	if !ok {
		return opt, f, remove, code, false
	}
	for _, fam := range opt.Scenarios {
		if !slices.Contains(scenarios.Families, fam) {
			fmt.Fprintf(stderr, "locktorture compare: --families: unknown family %q (known: %s)\n", fam, strings.Join(scenarios.Families, ", "))
			return opt, f, remove, exitBadArgs, false
		}
	}
	if len(opt.Scenarios) == 0 {
		opt.Scenarios = slices.Clone(scenarios.Families)
	}
	fams := opt.Scenarios
	opt.Scenarios = []string{"baseline"}
	for _, fam := range fams {
		opt.Scenarios = append(opt.Scenarios, scenarios.FamilyScenarios(fam)...)
	}
	rows, err := parseExecRows(f.execs)
	if err != nil {
		fmt.Fprintf(stderr, "locktorture compare: --exec %v\n", err)
		return opt, f, remove, exitBadArgs, false
	}
	if err := rowSettings(rows, f.execServers, f.execClaims); err != nil {
		fmt.Fprintf(stderr, "locktorture compare: %v\n", err)
		return opt, f, remove, exitBadArgs, false
	}
	if len(opt.Backends) == 0 {
		for _, b := range backends.Names() {
			if b != scenarios.ExecBackend {
				opt.Backends = append(opt.Backends, b)
			}
		}
	}
	for _, r := range rows {
		rm, err := backends.RegisterUserRow(backends.UserRow{Name: r.name, Command: r.command, Servers: r.servers, Claim: r.claim, Renews: true})
		if err != nil {
			fmt.Fprintf(stderr, "locktorture compare: --exec %s: %v\n", r.name, err)
			remove()
			return opt, f, func() {}, exitBadArgs, false
		}
		removes = append(removes, rm)
		opt.Backends = append(opt.Backends, r.name)
	}
	opt.Compare = true
	// The baseline gives each backend's speed with no faults: one seed
	// of five clients on two keys for 3s (some 400 cycles) says it well
	// enough, and the families get the time.
	opt.OneSeed = []string{"baseline"}
	opt.Durations = map[string]time.Duration{"baseline": compareBaseline}
	f.autoLanes(&opt, "compare", stderr)
	return opt, f, remove, 0, true
}

// compareUsage is compare's --help.
func compareUsage(fs *flag.FlagSet, stderr io.Writer) {
	fmt.Fprintf(stderr, `Usage: locktorture compare [flags]

Compares locks before adoption: runs every fault family (%s)
on every built-in backend (--seeds each; with fencing on too, where the backend's
grants carry tokens) and the no-fault baseline, and writes
STORE/matrix/<timestamp>/compare.html, compare.png and compare.txt: rows are
backends, columns families, each cell what happened to safety (safe; unsafe:
stale holders, double grants, lost updates, with counts; stale holders whose
every stale write fencing rejected; not run, with the reason), the recovery
after the fault, and beside them each backend's speed with no faults. The
matrix's own report (index.html, junit.xml) is there too. --exec NAME='COMMAND'
adds a program of yours (speaking the client protocol) as a row, its cells judged
against no claim. Exit 0 when every cell is as its family expects, 1 when one is
not, 255 on a harness error, 254 for bad arguments.

`, strings.Join(scenarios.Families, ", "))
	fs.PrintDefaults()
}

// execRow is a program of the user's that compare runs as a row
// (--exec NAME='COMMAND ARGS').
type execRow struct {
	name    string
	command []string
	// servers and claim are its --exec-servers and --exec-claim.
	servers []string
	claim   string
}

// rowSettings gives the rows their --exec-servers (NAME=KINDS) and
// --exec-claim (NAME=CLAIM) values: each names a row --exec gave, once.
// An error is one line, naming the flag.
func rowSettings(rows []execRow, servers, claims []string) error {
	find := func(flag, v string) (*execRow, string, error) {
		name, val, ok := strings.Cut(v, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.TrimSpace(val) == "" {
			return nil, "", fmt.Errorf("%s %q: want NAME=VALUE, NAME a row --exec names", flag, v)
		}
		for i := range rows {
			if rows[i].name == name {
				return &rows[i], strings.TrimSpace(val), nil
			}
		}
		return nil, "", fmt.Errorf("%s %q: no --exec row is named %q", flag, v, name)
	}
	for _, v := range servers {
		r, val, err := find("--exec-servers", v)
		if err != nil {
			return err
		}
		if r.servers != nil {
			return fmt.Errorf("--exec-servers: row %s given twice", r.name)
		}
		if r.servers, err = backends.ParseServers(val, cluster.KindNames()); err != nil {
			return fmt.Errorf("--exec-servers %s: %w", r.name, err)
		}
	}
	for _, v := range claims {
		r, val, err := find("--exec-claim", v)
		if err != nil {
			return err
		}
		if r.claim != "" {
			return fmt.Errorf("--exec-claim: row %s given twice", r.name)
		}
		if err := scenarios.CheckClaim(val); err != nil {
			return fmt.Errorf("--exec-claim %s: %w", r.name, err)
		}
		r.claim = val
	}
	return nil
}

// rowName is what a row of the user's may be called.
var rowName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// maxRowName bounds a row's name: it names a directory of the store, as a
// backend's does (a scenario's backend: is at most 100 characters).
const maxRowName = 100

// parseExecRows checks compare's --exec values: NAME='COMMAND ARGS', the
// name new and plain, the command split as a shell splits it and found.
// An error is one line, after "--exec ".
func parseExecRows(values []string) ([]execRow, error) {
	var rows []execRow
	seen := map[string]string{} // the names given, by their lower case
	for _, v := range values {
		name, line, ok := strings.Cut(v, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want NAME='COMMAND ARGS' (a row's name, then the program that speaks the client protocol)", v)
		}
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("%q: empty name: want NAME='COMMAND ARGS'", v)
		case len(name) > maxRowName:
			return nil, fmt.Errorf("%.20q...: a row's name is at most %d characters, not %d", name, maxRowName, len(name))
		case !rowName.MatchString(name):
			return nil, fmt.Errorf("%q: a row's name is letters, digits, '.', '_' and '-', not %q", v, name)
		case seen[strings.ToLower(name)] != "":
			return nil, fmt.Errorf("%s: %q given twice (as %q)", name, name, seen[strings.ToLower(name)])
		}
		if _, _, err := backends.Lookup(name); err == nil {
			return nil, fmt.Errorf("%s: %q is a built-in backend: name your row otherwise", name, name)
		}
		for _, b := range backends.Names() {
			if strings.EqualFold(b, name) {
				// Its runs' directories and its row would be told from the
				// built-in's by case alone (one and the same on some disks).
				return nil, fmt.Errorf("%s: %q differs only in case from the built-in backend %q: name your row otherwise", name, name, b)
			}
		}
		seen[strings.ToLower(name)] = name
		argv, err := scenarios.SplitCommand(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		if len(argv) == 0 {
			return nil, fmt.Errorf("%s: no command: want NAME='COMMAND ARGS'", name)
		}
		if _, err := exec.LookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("%s: command %q not found: %v", name, argv[0], err)
		}
		rows = append(rows, execRow{name: name, command: argv})
	}
	return rows, nil
}

// compareBaseline is how long compare runs the baseline of each backend.
const compareBaseline = 3 * time.Second

// printCompare prints the comparison table and where its report is.
func printCompare(w io.Writer, out *runner.MatrixOutcome) {
	fmt.Fprintln(w)
	fmt.Fprint(w, reports.CompareTable(out.Matrix))
	fmt.Fprint(w, reports.CompareLegend)
	fmt.Fprintf(w, "matrix:   %s\n", out.Dir)
	printWritten(w, out.Dir, [][2]string{{"report", reports.FileCompareHTML}, {"png", reports.FileComparePNG}, {"junit", reports.FileJUnit}})
}

// programServers is the KINDS of run's and client-check's --exec-servers,
// which name one program: given as compare's NAME=KINDS, the name is
// dropped.
func programServers(v string) string {
	if _, kinds, ok := strings.Cut(v, "="); ok {
		return kinds
	}
	return v
}
