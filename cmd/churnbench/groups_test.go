package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGroupsPayload(t *testing.T) {
	for _, p := range []payload{
		{},
		{sched: 1234567890, sent: 1234601234, producer: 2, seq: 517},
		{sched: 1<<63 - 1, sent: 1<<63 - 1, producer: 1<<31 - 1, seq: 1<<31 - 1},
	} {
		b := appendPayload([]byte("prefix"), p)
		s := string(b[len("prefix"):])
		if len(s) != groupsPayloadLen {
			t.Errorf("appendPayload(%+v) = %q, %d bytes, want %d", p, s, len(s), groupsPayloadLen)
		}
		if got, ok := parsePayload(s); !ok || got != p {
			t.Errorf("parsePayload(%q) = %+v, %v, want %+v", s, got, ok, p)
		}
	}
	good := string(appendPayload(nil, payload{sched: 5, sent: 6, producer: 1, seq: 2}))
	for _, bad := range []string{"", "x", good[:63], good + "x", strings.Replace(good, "1", "a", 1),
		strings.Repeat("x", 64), strings.Replace(good, " 2 ", " 2 3 ", 1)[:64],
		"-000000000000000005 0000000000000000006 1 2 xxxxxxxxxxxxxxxxxxxxxx"} {
		if p, ok := parsePayload(bad); ok {
			t.Errorf("parsePayload(%q) = %+v, want a failure", bad, p)
		}
	}
}

func TestGroupEntries(t *testing.T) {
	ok := []any{[]any{"s", []any{
		[]any{"1-1", []any{"d", "a"}},
		[]any{"1-2", []any{"d", "b"}},
	}}}
	ents, err := groupEntries(ok, "s")
	if err != nil || fmt.Sprint(ents) != "[{1-1 a} {1-2 b}]" {
		t.Errorf("groupEntries = %v, %v", ents, err)
	}
	if ents, err := groupEntries([]any{[]any{"s", []any{}}}, "s"); err != nil || len(ents) != 0 {
		t.Errorf("groupEntries(no entries) = %v, %v", ents, err)
	}
	for _, bad := range []any{
		"x", []any{}, []any{[]any{"t", []any{}}},
		[]any{[]any{"s", []any{}}, []any{"s", []any{}}},
		[]any{[]any{"s", []any{[]any{"1-1", []any{"f", "a"}}}}},
		[]any{[]any{"s", []any{[]any{"1-1", []any{"d", "a", "e", "b"}}}}},
		[]any{[]any{"s", []any{[]any{"1-1", nil}}}},
		[]any{[]any{"s", []any{[]any{int64(1), []any{"d", "a"}}}}},
	} {
		if ents, err := groupEntries(bad, "s"); err == nil {
			t.Errorf("groupEntries(%v) = %v, want an error", bad, ents)
		}
	}
}

func TestGroupsFigures(t *testing.T) {
	g := &groupsResult{mode: "rate", entries: 200, acked: 200, scheduled: 210, elapsed: 2 * time.Second,
		cpu: 10 * time.Millisecond, reads: 40, readEnts: 200, length: 200}
	for i := 1; i <= 200; i++ {
		g.lat = append(g.lat, time.Duration(i)*time.Millisecond)
	}
	if got := g.latMs(0.99); got != 198 {
		t.Errorf("p99 = %v, want 198", got)
	}
	if got := g.latMs(0.5); got != 100 {
		t.Errorf("p50 = %v, want 100", got)
	}
	if got := g.latMs(1); got != 200 {
		t.Errorf("max = %v, want 200", got)
	}
	if got := g.latSendMs(0.99); got != -1 {
		t.Errorf("p99 send without latencies = %v, want -1", got)
	}
	if got := g.msgsPerSec(); got != 100 {
		t.Errorf("msgs/s = %v, want 100", got)
	}
	if got := g.cpuPerMsg(); got != 50 {
		t.Errorf("cpu µs/msg = %v, want 50", got)
	}
	if got := g.batch(); got != 5 {
		t.Errorf("batch = %v, want 5", got)
	}
	if got := g.unsent(); got != 10 {
		t.Errorf("unsent = %v, want 10", got)
	}
	if err := g.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	g.duplicates, g.dupIDs = 1, []string{"1-1"}
	g.missing = []string{"1-2", "1-3"}
	g.unknown, g.mismatched, g.ackShort = 3, 4, 5
	g.pending, g.pendingIDs = 2, []string{"1-2 (c0, delivered 1 times)"}
	g.length = 201
	err := g.check()
	for _, want := range []string{"rate run", "1 extra deliveries", "1-1", "2 of 200 entries never received", "1-2 1-3",
		"3 received IDs", "4 entries whose payload", "5 fewer IDs", "XPENDING key g counts 2", "1-2 (c0, delivered 1 times)",
		"XLEN is 201, want 200"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check() = %v, want it to contain %q", err, want)
		}
	}
}

func TestParseGroups(t *testing.T) {
	c, err := parse(strings.Fields("-workloads groups"), &bytes.Buffer{})
	if err != nil || !c.groups || c.n != groupsDefaultN || c.block != groupsDefaultBlock || c.producers != 4 ||
		c.consumers != 4 || c.rate != 20000 || c.duration != 10*time.Second || c.drain != 10*time.Second {
		t.Fatalf("parse = %+v, %v", c, err)
	}
	c, err = parse(strings.Fields("-workloads groups -n 7 -block 2s -producers 1 -consumers 3 -rate 5 -duration 1s"), &bytes.Buffer{})
	if err != nil || c.n != 7 || c.block != 2*time.Second || c.producers != 1 || c.consumers != 3 || c.rate != 5 {
		t.Fatalf("parse = %+v, %v", c, err)
	}
	for _, cs := range []struct{ args, err string }{
		{"-workloads groups,xdel-queue", "runs on its own"},
		{"-workloads xdel-queue,groups", "runs on its own"},
		{"-workloads groups -producers 0", "-producers"},
		{"-workloads groups -consumers 0", "-consumers"},
		{"-workloads groups -rate 0", "-rate"},
		{"-workloads groups -duration 0s", "-duration"},
		{"-workloads groups -rate 1 -duration 500ms", "schedules no entry"},
		{"-workloads groups -block 100us", "-block"},
		{"-workloads groups -drain 0s", "-drain"},
		{"-workloads groups -n 0", "-n must be at least 1"},
	} {
		_, err := parse(strings.Fields(cs.args), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), cs.err) {
			t.Errorf("parse(%q) = %v, want an error containing %q", cs.args, err, cs.err)
		}
	}
}

// TestRunGroups runs the groups workload, small, against a real server:
// every entry is received once and acknowledged in both runs, and the CSV
// has a max row and a rate row with positive figures.
func TestRunGroups(t *testing.T) {
	addr := startSediment(t)
	args := []string{"-addr", addr, "-workloads", "groups", "-n", "2000", "-producers", "2", "-consumers", "2",
		"-rate", "2000", "-duration", "1s", "-csv", "-pid", fmt.Sprint(os.Getpid())}
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s\nstdout: %s", err, errb.String(), out.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, out.String())
	}
	if len(rows) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", out.String())
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	num := func(row []string, name string) float64 {
		t.Helper()
		v, err := strconv.ParseFloat(row[col[name]], 64)
		if err != nil {
			t.Fatalf("row %v: column %s: %v", row, name, err)
		}
		return v
	}
	for i, mode := range []string{"max", "rate"} {
		row := rows[i+1]
		if row[col["mode"]] != mode || row[col["producers"]] != "2" || row[col["consumers"]] != "2" {
			t.Errorf("row %v: want mode %s, 2 producers, 2 consumers", row, mode)
		}
		entries := num(row, "entries")
		if entries <= 0 || num(row, "acked") != entries {
			t.Errorf("row %v: want every entry added acknowledged", row)
		}
		if mode == "max" && entries != 2000 {
			t.Errorf("row %v: want 2000 entries", row)
		}
		if mode == "rate" && (num(row, "offered_per_s") != 2000 || entries+num(row, "unsent") != 2000) {
			t.Errorf("row %v: want 2000 entries/s offered, 2000 scheduled", row)
		}
		for _, name := range []string{"seconds", "msgs_per_s", "p50_ms", "p99_ms", "max_ms", "p99_send_ms", "batch", "cpu_us_per_msg"} {
			if v := num(row, name); v <= 0 {
				t.Errorf("row %v: %s = %v, want it positive", row, name, v)
			}
		}
		if num(row, "duplicates") != 0 || num(row, "missing") != 0 {
			t.Errorf("row %v: want no duplicates and nothing missing", row)
		}
	}

	// The table form.
	out.Reset()
	args = []string{"-addr", addr, "-workloads", "groups", "-n", "50", "-producers", "1", "-consumers", "3",
		"-rate", "100", "-duration", "200ms"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	rowsByMode := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			rowsByMode[f[0]] = f
		}
	}
	if h, m, r := rowsByMode["mode"], rowsByMode["max"], rowsByMode["rate"]; len(h) < 3 || h[1] != "offered/s" ||
		len(m) < 3 || m[1] != "-" || m[2] != "50" || len(r) < 3 || r[1] != "100" || r[2] != "20" {
		t.Errorf("table:\n%s", out.String())
	}
}
