package broker

import (
	"bufio"
	"os"
	"sort"
	"strings"
	"testing"
)

// docRow is one command row of docs/commands.md.
type docRow struct {
	name   string // as written, e.g. "XADD" or "XGROUP SETID"
	status string // supported, partial or planned
	line   int
}

// readCommandDoc parses the command rows of docs/commands.md: table rows
// whose first cell is a name in backticks, "| `XADD` | supported | ... |".
func readCommandDoc(t *testing.T, path string) []docRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var rows []docRow
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 {
			continue
		}
		first := strings.TrimSpace(cells[0])
		if len(first) < 3 || first[0] != '`' || first[len(first)-1] != '`' {
			continue // header, separator or a row of another table
		}
		name := first[1 : len(first)-1]
		status := strings.Trim(strings.TrimSpace(cells[1]), "`*")
		if i := strings.IndexAny(status, " :;,("); i >= 0 {
			status = status[:i]
		}
		rows = append(rows, docRow{name: name, status: strings.ToLower(status), line: n})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return rows
}

// TestTableMatchesDocs checks that docs/commands.md documents exactly the
// commands of the command table as supported or partial, and nothing else.
func TestTableMatchesDocs(t *testing.T) {
	const path = "../docs/commands.md"
	rows := readCommandDoc(t, path)
	if len(rows) == 0 {
		t.Fatalf("%s: no command rows found (want rows like \"| `XADD` | supported | ... |\")", path)
	}
	documented := map[string]docRow{}
	for _, r := range rows {
		switch r.status {
		case "supported", "partial", "planned":
		default:
			t.Errorf("%s:%d: %s has status %q, want supported, partial or planned", path, r.line, r.name, r.status)
			continue
		}
		if r.name != strings.ToUpper(r.name) {
			t.Errorf("%s:%d: command %q must be written in upper case", path, r.line, r.name)
		}
		if r.status == "planned" {
			continue
		}
		key := strings.ToLower(r.name)
		if prev, dup := documented[key]; dup {
			t.Errorf("%s:%d: %s documented twice (first at line %d)", path, r.line, r.name, prev.line)
		}
		documented[key] = r
	}
	var names []string
	for name := range commandTable {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := documented[name]; !ok {
			t.Errorf("command %s is in the command table but not documented as supported or partial in %s", strings.ToUpper(name), path)
		}
	}
	for key, r := range documented {
		if commandTable[key] == nil {
			t.Errorf("%s:%d: %s is documented as %s but is not in the command table", path, r.line, r.name, r.status)
		}
	}
}

// TestTableInvariants checks every command table entry is complete.
func TestTableInvariants(t *testing.T) {
	if len(commandTable) == 0 {
		t.Fatal("command table is empty")
	}
	for key, c := range commandTable {
		if c.name != key {
			t.Errorf("%s: registered under %q", c.name, key)
		}
		if c.arity == 0 {
			t.Errorf("%s: arity is 0", c.name)
		}
		if c.run == nil {
			t.Errorf("%s: no run func", c.name)
		}
		if c.group == "" {
			t.Errorf("%s: no group", c.name)
		}
		if c.summary == "" {
			t.Errorf("%s: no summary", c.name)
		}
		if c.flags&flagReadonly != 0 && c.flags&flagWrite != 0 {
			t.Errorf("%s: both readonly and write", c.name)
		}
	}
}
