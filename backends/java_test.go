package backends

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestCuratorRow: the curator row is a program row over ZooKeeper, a lease
// whose library renews it (its session), naming Apache Curator in Java; its
// packages — the recipes jar's Debian package and a JDK to build the
// adapter — are what make deps installs (ClientPackages).
func TestCuratorRow(t *testing.T) {
	info, _, err := Lookup("curator")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Kinds, []string{"zookeeper"}) || !info.Lease || !info.RenewsItself {
		t.Errorf("info %+v: want zookeeper, a lease, renewing itself", info)
	}
	if l := info.Library; l == nil || l.Name != "Apache Curator" || l.Language != "Java" || l.Jar != CuratorJar {
		t.Errorf("library %+v", info.Library)
	}
	p, ok := ProgramOf("curator")
	if !ok || p.Prepare == nil || !slices.Contains(p.Command, "clients/java/curator_lock.sh") {
		t.Errorf("program %+v: want clients/java/curator_lock.sh, prepared", p)
	}
	var pkgs []string
	for _, p := range ClientPackages() {
		if p.Backend == "curator" {
			pkgs = append(pkgs, p.Name)
		}
	}
	if !slices.Equal(pkgs, []string{"libcurator-recipes-java", "default-jdk-headless"}) {
		t.Errorf("packages %v", pkgs)
	}
}

// TestJarVersion reads a Java library's version from its jar when no
// Debian package owns it: Maven's pom.properties for the library's module,
// else the manifest's Implementation-Version, else Bundle-Version; and
// "unknown" for no jar at all.
func TestJarVersion(t *testing.T) {
	dir := t.TempDir()
	jar := func(name string, files map[string]string) string {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		w := zip.NewWriter(f)
		for n, body := range files {
			fw, err := w.Create(n)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const mod = "org.example:lock"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"pom", map[string]string{
			"META-INF/maven/org.example/lock/pom.properties": "#Generated\ngroupId=org.example\nartifactId=lock\nversion=5.4.0\n",
			"META-INF/MANIFEST.MF":                           "Manifest-Version: 1.0\r\nImplementation-Version: 9.9\r\n",
		}, "5.4.0"},
		{"implementation", map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\nImplementation-Version: 1.2.3\r\n"}, "1.2.3"},
		{"bundle", map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\nBundle-Version: 2.0.1\r\n"}, "2.0.1"},
		{"none", map[string]string{"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\r\n"}, "unknown"},
	} {
		l := Library{Name: "lock", Module: mod, Jar: jar(c.name+".jar", c.files), Debian: "no-such-package-here", Language: "Java"}
		if got := l.Version(); got != c.want {
			t.Errorf("%s: version %q, want %q", c.name, got, c.want)
		}
	}
	if got := (Library{Module: mod, Jar: filepath.Join(dir, "absent.jar"), Language: "Java"}).Version(); got != "unknown" {
		t.Errorf("no jar: version %q, want unknown", got)
	}
}

// TestCuratorVersion: with Debian's Curator installed, the row's version
// is its package's (dpkg-query), read at run time.
func TestCuratorVersion(t *testing.T) {
	want, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "libcurator-recipes-java").Output()
	if err != nil || len(want) == 0 {
		t.Skip("libcurator-recipes-java not installed (make deps)")
	}
	info, _, _ := Lookup("curator")
	if got := info.Library.Version(); got != strings.TrimSpace(string(want)) {
		t.Errorf("version %q, want %q", got, want)
	}
}

// TestCuratorOptions: the curator row takes wait_ms (how long an acquire
// waits in line), refuses a negative one and one the answer could not come
// back within (over 70% of the timeout), and sends it to the adapter by
// the same key.
func TestCuratorOptions(t *testing.T) {
	info, _, err := Lookup("curator")
	if err != nil {
		t.Fatal(err)
	}
	o := info.Options()
	if keys := OptionKeys(o); !slices.Equal(keys, []string{"wait_ms"}) {
		t.Fatalf("keys %v", keys)
	}
	env := Env{OpTimeout: 2 * time.Second}
	for wait, ok := range map[int]bool{0: true, 1400: true, 1401: false, -1: false} {
		err := (&CuratorOptions{WaitMS: wait}).Validate(env)
		if (err == nil) != ok {
			t.Errorf("wait_ms %d: %v", wait, err)
		}
	}
	b, err := yaml.Marshal(&CuratorOptions{WaitMS: 1400})
	if err != nil || strings.TrimSpace(string(b)) != "wait_ms: 1400" {
		t.Errorf("sent as %q (%v)", b, err)
	}
}
