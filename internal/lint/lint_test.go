package lint

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const (
	module    = "github.com/sediment-dev/sediment"
	pebble    = "github.com/cockroachdb/pebble/v2"
	redcon    = "github.com/tidwall/redcon"
	natsOrg   = "github.com/nats-io/"
	codecPkg  = module + "/codec"
	globPkg   = module + "/internal/glob"
	matPkg    = module + "/materialize"
	streams   = module + "/streams"
	groups    = module + "/groups"
	brokerPkg = module + "/broker"
	cmdRtPkg  = module + "/command"
	typesPkg  = module + "/types/"
	keyspPkg  = module + "/keyspace"
	numPkg    = module + "/internal/num"
	lcsPkg    = module + "/internal/lcs"
	ldblPkg   = module + "/internal/ldouble"
	rtestPkg  = module + "/internal/redistest"
	cmdPkg    = module + "/cmd/sediment"
)

// pkgInfo is what go list tells about one of our packages.
type pkgInfo struct {
	imports []string        // direct imports (non-test files)
	deps    map[string]bool // transitive imports, the package itself excluded
	nonStd  []string        // transitive imports outside the standard library
}

// goList runs go list with args and returns its output lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += ": " + string(ee.Stderr)
		}
		t.Fatalf("go list %s: %s", strings.Join(args, " "), msg)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// loadPackages returns every package of the module with its direct and
// transitive imports.
func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	pkgs := map[string]*pkgInfo{}
	for _, l := range goList(t, "-f", `{{.ImportPath}}:{{join .Imports " "}}`, module+"/...") {
		path, imports, _ := strings.Cut(l, ":")
		pkgs[path] = &pkgInfo{imports: strings.Fields(imports), deps: map[string]bool{}}
	}
	for _, want := range []string{codecPkg, globPkg, matPkg, streams, groups, brokerPkg, cmdPkg} {
		if pkgs[want] == nil {
			t.Fatalf("go list %s/... did not list %s; the rules below would pass vacuously", module, want)
		}
	}
	for path, p := range pkgs {
		for _, l := range goList(t, "-deps", "-f", "{{.ImportPath}} {{.Standard}}", path) {
			dep, std, _ := strings.Cut(l, " ")
			if dep == path {
				continue
			}
			p.deps[dep] = true
			if std != "true" {
				p.nonStd = append(p.nonStd, dep)
			}
		}
		sort.Strings(p.nonStd)
	}
	return pkgs
}

// matches reports whether imp is target or one of its sub-packages (for a
// target ending in '/', any path with that prefix).
func matches(imp, target string) bool {
	if strings.HasSuffix(target, "/") {
		return strings.HasPrefix(imp, target)
	}
	return imp == target || strings.HasPrefix(imp, target+"/")
}

func direct(p *pkgInfo, target string) []string {
	var out []string
	for _, imp := range p.imports {
		if matches(imp, target) {
			out = append(out, imp)
		}
	}
	return out
}

func transitive(p *pkgInfo, target string) []string {
	var out []string
	for dep := range p.deps {
		if matches(dep, target) {
			out = append(out, dep)
		}
	}
	sort.Strings(out)
	return out
}

func sortedPaths(pkgs map[string]*pkgInfo) []string {
	var out []string
	for path := range pkgs {
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// TestDependencyRules enforces the import rules of package lint's doc.
func TestDependencyRules(t *testing.T) {
	pkgs := loadPackages(t)

	t.Run("pebble only in materialize", func(t *testing.T) {
		if len(direct(pkgs[matPkg], pebble)) == 0 {
			t.Errorf("materialize does not import %s; update this rule if the store moved", pebble)
		}
		for _, path := range sortedPaths(pkgs) {
			if path == matPkg {
				continue
			}
			p := pkgs[path]
			if got := direct(p, pebble); len(got) > 0 {
				t.Errorf("%s imports %v: only materialize may import Pebble", path, got)
			}
			if got := transitive(p, pebble); len(got) > 0 && !p.deps[matPkg] {
				t.Errorf("%s depends on %v without going through materialize", path, got)
			}
		}
	})

	t.Run("redcon only in broker and cmd", func(t *testing.T) {
		for _, path := range sortedPaths(pkgs) {
			if path == brokerPkg || path == cmdPkg {
				continue
			}
			p := pkgs[path]
			if got := direct(p, redcon); len(got) > 0 {
				t.Errorf("%s imports %v: only broker and cmd/sediment may import redcon", path, got)
			}
			if got := transitive(p, redcon); len(got) > 0 && !p.deps[brokerPkg] {
				t.Errorf("%s depends on %v without going through broker", path, got)
			}
		}
	})

	t.Run("codec and the internal helpers are standard library only", func(t *testing.T) {
		for _, path := range []string{codecPkg, globPkg, numPkg, lcsPkg, ldblPkg, rtestPkg} {
			if got := pkgs[path].nonStd; len(got) > 0 {
				t.Errorf("%s depends on %v: it may import only the standard library", path, got)
			}
		}
	})

	t.Run("streams and groups stay off the edge", func(t *testing.T) {
		for _, path := range []string{streams, groups} {
			for _, target := range []string{brokerPkg, redcon, natsOrg} {
				if got := transitive(pkgs[path], target); len(got) > 0 {
					t.Errorf("%s depends on %v: it must not import broker, redcon or NATS", path, got)
				}
			}
		}
	})

	t.Run("command packages stay off the edge", func(t *testing.T) {
		n := 0
		for _, path := range sortedPaths(pkgs) {
			if !matches(path, cmdRtPkg) {
				continue
			}
			n++
			for _, target := range []string{brokerPkg, redcon, natsOrg} {
				if got := transitive(pkgs[path], target); len(got) > 0 {
					t.Errorf("%s depends on %v: command packages must not import broker, redcon or NATS", path, got)
				}
			}
		}
		if n < 2 {
			t.Errorf("found %d command packages; the rule would pass vacuously", n)
		}
	})

	t.Run("type packages stay below the commands", func(t *testing.T) {
		n := 0
		for _, path := range sortedPaths(pkgs) {
			if !matches(path, typesPkg) && path != keyspPkg {
				continue
			}
			n++
			for _, target := range []string{brokerPkg, cmdRtPkg, redcon, natsOrg} {
				if got := transitive(pkgs[path], target); len(got) > 0 {
					t.Errorf("%s depends on %v: type packages and keyspace must not import broker, command, redcon or NATS", path, got)
				}
			}
		}
		if n == 0 {
			t.Error("found no type packages; the rule would pass vacuously")
		}
	})

	t.Run("materialize stays below the domain", func(t *testing.T) {
		for _, target := range []string{brokerPkg, streams, groups, cmdRtPkg, typesPkg} {
			if got := transitive(pkgs[matPkg], target); len(got) > 0 {
				t.Errorf("materialize depends on %v: it must not import broker, command, streams, groups or types", got)
			}
		}
	})
}

// TestMatches pins the path matching the rules rely on.
func TestMatches(t *testing.T) {
	cases := []struct {
		imp, target string
		want        bool
	}{
		{pebble, pebble, true},
		{pebble + "/vfs", pebble, true},
		{"github.com/cockroachdb/pebble", pebble, false},
		{"github.com/cockroachdb/pebble/v20", pebble, false},
		{"github.com/nats-io/nats.go", natsOrg, true},
		{"github.com/nats-io/nats-server/v2/server", natsOrg, true},
		{streams, module + "/stream", false},
		{brokerPkg, brokerPkg, true},
	}
	for _, c := range cases {
		if got := matches(c.imp, c.target); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.imp, c.target, got, c.want)
		}
	}
}
