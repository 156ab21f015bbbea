package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/broker"
)

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:6380": true,
		"127.3.2.1:1":    true,
		"[::1]:6380":     true,
		"localhost:6380": true,
		"10.0.0.1:6380":  false,
		"0.0.0.0:6380":   false,
		"example.com:80": false,
		"127.0.0.1":      false,
		"127.0.0.1:":     false,
	} {
		if err := checkLoopback(addr); (err == nil) != ok {
			t.Errorf("checkLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ args, err string }{
		{"-workloads pel-probe", "must come right after group-ack"},
		{"-workloads xdel-queue,pel-probe", "must come right after group-ack"},
		{"-workloads nope", "unknown workload"},
		{"-n 20 -blocks 10 -workloads group-ack", "too small"},
		{"-n 5 -blocks 10", "must be at least -blocks"},
		{"-addr 192.168.1.2:6379", "only loopback"},
		{"-max-time -1s", "-max-time"},
		{"extra", "unexpected argument"},
	} {
		_, err := parse(strings.Fields(c.args), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("parse(%q) = %v, want an error containing %q", c.args, err, c.err)
		}
	}
	c, err := parse(strings.Fields("-workloads capped-exact,group-ack,pel-probe"), &bytes.Buffer{})
	if err != nil || len(c.workloads) != 3 {
		t.Fatalf("parse: %v, %d workloads", err, len(c.workloads))
	}
	c, err = parse(nil, &bytes.Buffer{})
	if err != nil || len(c.workloads) != len(workloads) {
		t.Fatalf("parse with defaults: %v, %d workloads, want %d", err, len(c.workloads), len(workloads))
	}
}

func TestParseStat(t *testing.T) {
	// Fields 14-17 (utime stime cutime cstime) are 150 25 20 5 ticks.
	line := "4242 (odd) name)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 20 5 20 0 9 0 100 0 0\n"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * time.Second; got != want {
		t.Errorf("parseStat = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 0 0 0 0"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
	if _, err := (&procCPU{path: fmt.Sprintf("/proc/%d/stat", os.Getpid())}).read(); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
}

// startSediment runs a Sediment server in this process on a loopback port.
func startSediment(t *testing.T) string {
	t.Helper()
	s, err := broker.New(broker.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("broker.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestRunSediment runs every workload, small, against a real server and
// checks the CSV: its replies pass the workloads' checks, and every block
// is there.
func TestRunSediment(t *testing.T) {
	addr := startSediment(t)
	args := []string{"-addr", addr, "-n", "300", "-blocks", "3", "-probe-n", "4", "-csv",
		"-pid", fmt.Sprint(os.Getpid())}
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, out.String())
	}
	got := map[string]int{} // workload -> "all" rows
	for _, row := range rows[1:] {
		if row[2] != "all" {
			continue
		}
		got[row[0]]++
		if row[5] == "" || row[6] != "0" {
			t.Errorf("row %v: want a CPU figure and no partial block", row)
		}
	}
	want := map[string]int{"capped-exact": 3, "capped-approx": 3, "group-ack": 3, "pel-probe": 3, "xdel-queue": 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("blocks per workload = %v, want %v\n%s", got, want, out.String())
	}
}

// TestMaxTime checks that -max-time ends a workload early with its partial
// block reported, and that the table marks it.
func TestMaxTime(t *testing.T) {
	addr := startSediment(t)
	args := []string{"-addr", addr, "-n", "1000000", "-blocks", "2", "-max-time", "200ms", "-workloads", "xdel-queue"}
	var out, errb bytes.Buffer
	start := time.Now()
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, errb.String())
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("run took %v with -max-time 200ms", d)
	}
	if s := out.String(); !strings.Contains(s, "\n1* ") || !strings.Contains(s, "stopped in block 1 of 2") {
		t.Errorf("table does not show the partial block:\n%s", s)
	}
}
