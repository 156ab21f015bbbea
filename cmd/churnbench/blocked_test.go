package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadReply(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"+PONG\r\n", "PONG"},
		{":42\r\n", "42"},
		{"$-1\r\n", "<nil>"},
		{"*-1\r\n", "<nil>"},
		{"$0\r\n\r\n", ""},
		{"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n", "[[s [[1-1 [f v]]]]]"},
		{"-ERR max number of clients reached\r\n", "ERR max number of clients reached"},
	} {
		v, err := readReply(bufio.NewReader(strings.NewReader(c.in)), 0)
		if err != nil {
			t.Errorf("readReply(%q): %v", c.in, err)
			continue
		}
		if got := fmt.Sprint(v); got != c.want {
			t.Errorf("readReply(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, in := range []string{"?x\r\n", ":x\r\n", "$3\r\nab\r\n", "$2\r\nabcd", "*2\r\n+a\r\n", "+a\n",
		strings.Repeat("*1\r\n", maxReplyDepth+1) + "+a\r\n", fmt.Sprintf("$%d\r\n", maxReplyLen+1)} {
		if v, err := readReply(bufio.NewReader(strings.NewReader(in)), 0); err == nil {
			t.Errorf("readReply(%q) = %v, want an error", in, v)
		}
	}
}

func TestOneEntry(t *testing.T) {
	ok := []any{[]any{"s", []any{[]any{"1-1", []any{"f", "v"}}}}}
	if id, err := oneEntry(ok, "s"); err != nil || id != "1-1" {
		t.Errorf("oneEntry = %q, %v", id, err)
	}
	for _, bad := range []any{
		"x", []any{}, []any{[]any{"t", []any{[]any{"1-1", []any{}}}}},
		[]any{[]any{"s", []any{}}},
		[]any{[]any{"s", []any{[]any{"1-1", nil}, []any{"1-2", nil}}}},
	} {
		if _, err := oneEntry(bad, "s"); err == nil {
			t.Errorf("oneEntry(%v) succeeded", bad)
		}
	}
}

func TestNextID(t *testing.T) {
	for in, want := range map[string]string{"5-0": "5-1", "0-9": "0-10", "7-18446744073709551615": "8-0"} {
		if got, err := nextID(in); err != nil || got != want {
			t.Errorf("nextID(%q) = %q, %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"5", "a-1", "1-b", ""} {
		if _, err := nextID(bad); err == nil {
			t.Errorf("nextID(%q) succeeded", bad)
		}
	}
}

func TestBlockedFigures(t *testing.T) {
	b := &blockedResult{workers: 3, entries: 200, delivered: 200, elapsed: 2 * time.Second, cpu: 10 * time.Millisecond}
	for i := 1; i <= 200; i++ {
		b.xadd = append(b.xadd, time.Duration(i)*time.Millisecond)
	}
	if got := b.xaddP99Ms(); got != 198 {
		t.Errorf("p99 = %v, want 198", got)
	}
	if got := b.xaddMsPerOp(); got != 100.5 {
		t.Errorf("mean = %v, want 100.5", got)
	}
	if got := b.entriesPerSec(); got != 100 {
		t.Errorf("entries/s = %v, want 100", got)
	}
	if got := b.cpuPerEntry(); got != 50 {
		t.Errorf("cpu µs/entry = %v, want 50", got)
	}
	b.pending = 200
	if err := b.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	b.duplicates, b.dupIDs = 1, []string{"1-1"}
	b.missing, b.lostReplies = []string{"1-2", "1-3"}, 1
	b.pending, b.misattributed = 201, 1
	err := b.check()
	for _, want := range []string{"W=3", "1 extra deliveries", "1-1", "2 of 200 entries never received", "1-2 1-3",
		"1 of them are pending", "1 were never delivered", "PEL holds 201 entries, want 200", "1 entries pending under another consumer"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("check() = %v, want it to contain %q", err, want)
		}
	}
}

func TestTaskCPU(t *testing.T) {
	c := &taskCPU{dir: fmt.Sprintf("/proc/%d/task", os.Getpid())}
	t0, err := c.read()
	if err != nil {
		t.Skipf("no schedstat here: %v", err)
	}
	for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
	}
	t1, err := c.read()
	if err != nil {
		t.Fatal(err)
	}
	if d := t1 - t0; d < 10*time.Millisecond {
		t.Errorf("30 ms of spinning counted as %v", d)
	}
}

func TestParseBlocked(t *testing.T) {
	c, err := parse(strings.Fields("-workloads blocked -n 5 -workers 3,7"), &bytes.Buffer{})
	if err != nil || !c.blocked || fmt.Sprint(c.workers) != "[3 7]" || c.block != 2*time.Second || c.drain != 10*time.Second {
		t.Fatalf("parse = %+v, %v", c, err)
	}
	for _, cs := range []struct{ args, err string }{
		{"-workloads blocked,xdel-queue", "runs on its own"},
		{"-workloads xdel-queue,blocked", "runs on its own"},
		{"-workloads blocked -workers 3,0", "-workers"},
		{"-workloads blocked -workers x", "-workers"},
		{"-workloads blocked -block 100us", "-block"},
		{"-workloads blocked -drain 0s", "-drain"},
		{"-workloads blocked -n 0", "-n must be at least 1"},
	} {
		_, err := parse(strings.Fields(cs.args), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), cs.err) {
			t.Errorf("parse(%q) = %v, want an error containing %q", cs.args, err, cs.err)
		}
	}
}

// TestDialOutOfFiles checks that running out of file descriptors says so,
// with the limit to raise.
func TestDialOutOfFiles(t *testing.T) {
	limit := openFileLimit()
	if !strings.HasPrefix(limit, "soft ") && limit != "unknown" {
		t.Errorf("openFileLimit() = %q", limit)
	}
	err := explainDial(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}, 791, 1001, limit)
	if !errors.Is(err, syscall.EMFILE) || !strings.Contains(err.Error(), "at connection 791 of 1001") ||
		!strings.Contains(err.Error(), "(ulimit -n, now "+limit+")") || !strings.Contains(err.Error(), "to at least 1065") {
		t.Errorf("explainDial = %v", err)
	}
	other := errors.New("connection refused")
	if err := explainDial(other, 3, 4, limit); err != other {
		t.Errorf("explainDial(%v) = %v, want it unchanged", other, err)
	}
}

// TestRunBlocked runs the blocked workload, small, against a real server:
// every entry reaches one worker, and the CSV has one row per worker
// count with a CPU figure.
func TestRunBlocked(t *testing.T) {
	addr := startSediment(t)
	args := []string{"-addr", addr, "-workloads", "blocked", "-n", "150", "-workers", "1,20", "-csv",
		"-pid", fmt.Sprint(os.Getpid())}
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s\nstdout: %s", err, errb.String(), out.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, out.String())
	}
	if len(rows) != 3 || rows[0][1] != "workers" {
		t.Fatalf("want a header and 2 rows:\n%s", out.String())
	}
	for i, w := range []string{"1", "20"} {
		row := rows[i+1]
		if row[1] != w || row[2] != "150" || row[3] != "150" || row[8] == "" || row[11] != "0" || row[12] != "0" || row[13] != "0" {
			t.Errorf("row %v: want W=%s, 150 entries all delivered once, a CPU figure", row, w)
		}
	}

	// The table form, with a BLOCK short enough to time out while waiting.
	out.Reset()
	args = []string{"-addr", addr, "-workloads", "blocked", "-n", "20", "-workers", "5", "-block", "50ms"}
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	if s := out.String(); !strings.Contains(s, "workers  entries") || !strings.Contains(s, "\n5   ") {
		t.Errorf("table:\n%s", s)
	}
}
