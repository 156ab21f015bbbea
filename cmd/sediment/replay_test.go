package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// TestReplayCommand: `sediment replay` rebuilds a data directory from its
// newest snapshot and its change log, and says what it applied; bad
// invocations are refused with a reason.
func TestReplayCommand(t *testing.T) {
	dir := t.TempDir()
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	set := func(k, v string) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, []byte(k), codec.Meta{Type: codec.TypeString, Value: []byte(v)}, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	set("a", "1")
	if _, err := s.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	set("b", "2")
	set("a", "3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	to := filepath.Join(t.TempDir(), "rebuilt")
	var out bytes.Buffer
	if err := runReplay([]string{"--from-snapshot", dir, "--log", dir, "--to", to}, &out); err != nil {
		t.Fatal(err)
	}
	want := "(records up to 1) and 2 records of " + dir + " (2..3)"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("output %q lacks %q", out.String(), want)
	}
	r, err := materialize.Open(materialize.Options{Dir: to})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for k, v := range map[string]string{"a": "3", "b": "2"} {
		m, ok, err := r.View().Meta(0, []byte(k))
		if err != nil || !ok || string(m.Value) != v {
			t.Fatalf("rebuilt %q = %q, %v, %v; want %q", k, m.Value, ok, err, v)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", dir, "--to", to}, "--from-snapshot, --log and --to are all needed"},
		{[]string{"--from-snapshot", dir, "--log", dir, "--to", to}, "is not empty"},
		{[]string{"--from-snapshot", t.TempDir(), "--log", dir, "--to", t.TempDir(), "x"}, `unexpected argument "x"`},
	} {
		if err := runReplay(tc.args, &out); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("replay %q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestCheckRebuild: `sediment check --rebuild` passes a store that equals
// its newest snapshot plus the change log after it, and reports a store
// that does not (here: a snapshot altered after it was written) with exit
// status 1; without a snapshot it cannot run (2).
func TestCheckRebuild(t *testing.T) {
	dir := t.TempDir()
	s, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	set := func(s *materialize.Store, k, v string) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, []byte(k), codec.Meta{Type: codec.TypeString, Value: []byte(v)}, 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	set(s, "a", "1")
	other := t.TempDir()
	o, err := materialize.Open(materialize.Options{Dir: other})
	if err != nil {
		t.Fatal(err)
	}
	set(o, "a", "1")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := checkRun("--dir", other, "--rebuild"); code != checkFailed || !strings.Contains(errOut, "holds no snapshot") {
		t.Fatalf("check --rebuild of a store without a snapshot: %d %s", code, errOut)
	}
	snap, err := s.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	set(s, "b", "2")
	set(s, "a", "3")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := checkRun("--dir", dir, "--rebuild")
	if code != checkClean || !strings.Contains(out, "rebuilt from snapshot 1 and 2 change-log records (2..3)") || !strings.Contains(out, "keys that differ from the rebuild: 0") {
		t.Fatalf("check --rebuild of a consistent store: %d\n%s%s", code, out, errOut)
	}
	// The snapshot holds another record 1: the rebuild's key a differs.
	s2, err := materialize.Open(materialize.Options{Dir: snap.Path})
	if err != nil {
		t.Fatal(err)
	}
	set(s2, "c", "other")
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = checkRun("--dir", dir, "--rebuild")
	if code != checkViolations || !strings.Contains(out, `differs from the rebuild: key`) || strings.Contains(out, "keys that differ from the rebuild: 0") {
		t.Fatalf("check --rebuild of a store its snapshot does not rebuild: %d\n%s%s", code, out, errOut)
	}
}
