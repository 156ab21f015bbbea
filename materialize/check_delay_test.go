package materialize_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/broker"
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// The delayed-delivery checks of Check (check_streams.go, checkParked):
// parked pending entries (docs/key-format.md §5.6, docs/streams.md
// "Delayed delivery").

// delayT0 is the fake clock's start: the decision time of every command
// until fillDelayed moves it.
const delayT0 int64 = 1_700_000_000_000

// delayedStore is what fillDelayed wrote.
type delayedStore struct {
	parked   codec.ID // ds: parked in group g (and g2), due at delayT0+120000
	deleted  codec.ID // ds: parked in g and g2, then XDEL'd
	onlyDue  int64    // dp: the due time of both entries, parked in group g
	dpParked []codec.ID
}

// fillDelayed starts a server on dir with a fake clock, writes streams
// with delayed entries through real commands (go-redis) and stops it:
// parked entries, ones claimed once due, NACKed ones, a parked entry whose
// stream entry was deleted, a copy of the stream, and a stream whose only
// pending entries are parked.
func fillDelayed(t *testing.T, dir string) delayedStore {
	t.Helper()
	var now atomic.Int64
	now.Store(delayT0)
	f := startFill(t, broker.Options{Dir: dir, Now: func() time.Time { return time.UnixMilli(now.Load()) }})
	do := f.do
	id := func(v any) codec.ID {
		t.Helper()
		id, _, _, err := codec.ParseID([]byte(v.(string)), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	var st delayedStore
	do("XADD", "ds", "*", "f", "a")
	do("XADD", "ds", "DELAY", 60000, "*", "f", "b")
	st.parked = id(do("XADD", "ds", "DELAY", 120000, "*", "f", "c"))
	do("XADD", "ds", "DELIVERAT", delayT0+60000, "*", "f", "d")
	st.deleted = id(do("XADD", "ds", "DELAY", 90000, "*", "f", "e"))
	last := id(do("XADD", "ds", "*", "f", "f"))
	do("XGROUP", "CREATE", "ds", "g", "0")
	do("XGROUP", "CREATE", "ds", "g2", "0")
	do("XREADGROUP", "GROUP", "g", "c1", "STREAMS", "ds", ">")              // delivers 2, parks 4
	do("XNACK", "ds", "g", "FAIL", "IDS", 1, last.String())                 // the NACK zone
	do("XREADGROUP", "GROUP", "g2", "c1", "COUNT", 1, "STREAMS", "ds", ">") // the first entry only
	do("XREADGROUP", "GROUP", "g2", "c2", "STREAMS", "ds", ">")             // parks 4, delivers the last
	st.onlyDue = delayT0 + 600000
	st.dpParked = []codec.ID{
		id(do("XADD", "dp", "DELIVERAT", st.onlyDue, "*", "f", "x")),
		id(do("XADD", "dp", "DELIVERAT", st.onlyDue, "*", "f", "y")),
	}
	do("XGROUP", "CREATE", "dp", "g", "0")
	do("XREADGROUP", "GROUP", "g", "c", "STREAMS", "dp", ">") // parks both
	now.Add(61000)                                            // two of ds's entries are due
	do("XAUTOCLAIM", "ds", "g", "c2", 0, "0", "COUNT", 3)
	do("XREADGROUP", "GROUP", "g2", "c3", "CLAIM", 0, "COUNT", 3, "STREAMS", "ds", ">")
	do("XDEL", "ds", st.deleted.String())
	do("COPY", "ds", "dscopy")
	f.stop()
	return st
}

// parkedIn returns the parked entries of group (db 0) and whether each
// one's stream entry exists.
func parkedIn(t *testing.T, s *materialize.Store, key, group string) map[codec.ID]bool {
	t.Helper()
	pre := codec.GroupPrefix(codec.TagPEL, 0, b(key), b(group))
	kvs, err := materialize.RawScan(s, pre)
	if err != nil {
		t.Fatal(err)
	}
	out := map[codec.ID]bool{}
	for _, kv := range kvs {
		pe, err := codec.DecodePELEntry(kv[1])
		if err != nil {
			t.Fatal(err)
		}
		if !pe.Parked {
			continue
		}
		id, err := codec.DecodeID(kv[0][len(pre):])
		if err != nil {
			t.Fatal(err)
		}
		_, out[id], err = materialize.RawGet(s, codec.StreamEntryKey(0, b(key), id))
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestCheckDelayedClean: a store with parked entries (some due, some
// claimed once due, one whose stream entry was deleted, copies) written by
// real commands has no violation.
func TestCheckDelayedClean(t *testing.T) {
	dir := t.TempDir()
	st := fillDelayed(t, dir)
	s := openStore(t, materialize.Options{Dir: dir})
	mustClean(t, check(t, s, 0))
	// The fixture holds what the checks are about.
	// g's claim took both entries due; g2's took one (COUNT), so one due
	// entry is still parked there.
	for g, n := range map[string]int{"g": 2, "g2": 3} {
		for _, key := range []string{"ds", "dscopy"} {
			p := parkedIn(t, s, key, g)
			exists, parked := p[st.deleted]
			if len(p) != n || !p[st.parked] || !parked || exists {
				t.Errorf("%s %s: parked entries (stream entry exists) %v, want %d with %v (true) and %v (false)", key, g, p, n, st.parked, st.deleted)
			}
		}
	}
	if p := parkedIn(t, s, "dp", "g"); len(p) != 2 {
		t.Errorf("dp g: parked entries %v, want 2", p)
	}
}

// TestCheckFindsDelayCorruptions: each deliberate corruption of a parked
// entry, or of what it must agree with, is reported as its own violation.
func TestCheckFindsDelayCorruptions(t *testing.T) {
	dir := t.TempDir()
	st := fillDelayed(t, dir)
	s := openStore(t, materialize.Options{Dir: dir})
	due := delayT0 + 120000
	pk := codec.PELKey(0, b("ds"), b("g"), st.parked)
	setParked := func(t *testing.T, fn func(pe *codec.PELEntry)) {
		pe, err := codec.DecodePELEntry(rawGet(t, s, pk))
		if err != nil || !pe.Parked || pe.DeliveryTimeMs != due {
			t.Fatalf("%v: %+v, %v; want parked at %d", st.parked, pe, err, due)
		}
		fn(&pe)
		rawSet(t, s, pk, codec.AppendPELEntry(nil, pe))
	}
	setEntry := func(t *testing.T, dueMs int64) {
		xk := codec.StreamEntryKey(0, b("ds"), st.parked)
		fv, tail, err := codec.DecodeEntryTail(rawGet(t, s, xk))
		if err != nil || tail.DueMs != due {
			t.Fatalf("%v: tail %+v, %v; want due at %d", st.parked, tail, err, due)
		}
		tail.DueMs = dueMs
		rawSet(t, s, xk, codec.AppendEntryTail(codec.AppendFields(nil, fv), tail))
	}
	editGroup := func(t *testing.T, key string, fn func(g *codec.Group)) {
		k := codec.GroupKey(0, b(key), b("g"))
		g, err := codec.DecodeGroup(rawGet(t, s, k))
		if err != nil {
			t.Fatal(err)
		}
		fn(&g)
		rawSet(t, s, k, codec.AppendGroup(nil, g))
	}
	parkedName := `group "g" ID ` + st.parked.String()
	runCorruptions(t, s, []corruption{
		{
			// codec rejects the value; the check names the fault and
			// counts the entry as unowned, so nothing else is reported.
			name: "parked entry given an owner",
			edit: func(t *testing.T, s *materialize.Store) {
				rawSet(t, s, pk, append(codec.AppendPELEntry(nil, codec.PELEntry{DeliveryTimeMs: due, Consumer: b("c1")}), 'D'))
			},
			want: materialize.Violation{Key: b("ds"), Raw: pk, Check: "parked entry with an owner", Stored: parkedName + ` owned by "c1"`},
		},
		{
			name: "parked entry with a delivery count",
			edit: func(t *testing.T, s *materialize.Store) {
				setParked(t, func(pe *codec.PELEntry) { pe.DeliveryCount = 2 })
			},
			want: materialize.Violation{Key: b("ds"), Raw: pk, Check: "parked entry delivery count", Stored: parkedName + ": 2"},
		},
		{
			// The Q key also makes c1's Q keys disagree with its C value.
			name: "Q key added for a parked entry",
			edit: func(t *testing.T, s *materialize.Store) {
				rawSet(t, s, codec.ConsumerPELKey(0, b("ds"), b("g"), b("c1"), st.parked), nil)
			},
			want:   materialize.Violation{Key: b("ds"), Check: "Q key of a parked entry", Stored: `group "g" consumer "c1" ID ` + st.parked.String()},
			others: []string{"consumer pending count", "consumer first pending ID"},
		},
		{
			name: "parked entry's W key deleted",
			edit: func(t *testing.T, s *materialize.Store) {
				rawDel(t, s, codec.PELTimeKey(0, b("ds"), b("g"), due, st.parked))
			},
			want:   materialize.Violation{Key: b("ds"), Raw: pk, Check: "parked entry without W key", Stored: parkedName + " due at " + itoa(due), Counted: "no W key"},
			others: []string{"group W keys after the first"}, // the group's run holds the deleted key
		},
		{
			// Without TimeIndexed a missing W key is allowed (counted
			// Unindexed), but not for a parked entry: parking writes one.
			name: "parked entry's W key deleted in a group not time-indexed",
			edit: func(t *testing.T, s *materialize.Store) {
				editGroup(t, "ds", func(g *codec.Group) { g.TimeIndexed = false })
				rawDel(t, s, codec.PELTimeKey(0, b("ds"), b("g"), due, st.parked))
			},
			want:   materialize.Violation{Key: b("ds"), Raw: pk, Check: "parked entry without W key", Counted: "no W key"},
			others: []string{"group W keys after the first"}, // a run in a group not time-indexed
		},
		{
			// Its W key stays at the old time, so it disagrees too.
			name: "parked entry's delivery time moved",
			edit: func(t *testing.T, s *materialize.Store) {
				setParked(t, func(pe *codec.PELEntry) { pe.DeliveryTimeMs = due + 5 })
			},
			want:   materialize.Violation{Key: b("ds"), Raw: pk, Check: "parked entry due time", Stored: parkedName + " at " + itoa(due+5), Counted: "entry due at " + itoa(due)},
			others: []string{"parked entry without W key", "W key time"},
		},
		{
			// Reported once per group that parked the entry (g and g2).
			name: "stream entry's due time changed",
			edit: func(t *testing.T, s *materialize.Store) {
				setEntry(t, due+5)
			},
			want: materialize.Violation{Key: b("ds"), Check: "parked entry due time", Counted: "entry due at " + itoa(due+5)},
		},
		{
			name: "stream entry's delay tail removed",
			edit: func(t *testing.T, s *materialize.Store) {
				setEntry(t, 0)
			},
			want: materialize.Violation{Key: b("ds"), Check: "parked entry due time", Counted: "entry not delayed (no delay tail)"},
		},
		{
			name: "group's unowned count misses a parked entry",
			edit: func(t *testing.T, s *materialize.Store) {
				editGroup(t, "dp", func(g *codec.Group) {
					if g.Nacked != 2 || g.NackNext != 1 {
						t.Fatalf("dp g: nacked %d, nack-next %d; want 2 and 1", g.Nacked, g.NackNext)
					}
					g.Nacked = 1
				})
			},
			want: materialize.Violation{Key: b("dp"), Check: "group NACKed count", Stored: `group "g": 1`, Counted: "2 NACKed P entries (2 of them parked)"},
		},
		{
			name: "nack-next 0 in a group holding parked entries",
			edit: func(t *testing.T, s *materialize.Store) {
				editGroup(t, "dp", func(g *codec.Group) { g.NackNext = 0 })
			},
			want: materialize.Violation{Key: b("dp"), Check: "group NACK sequence", Stored: `group "g": next 0`, Counted: "2 parked entries: at least 1"},
		},
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
