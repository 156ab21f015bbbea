// Package redistest starts a real redis-server for differential tests: the
// Debian package's binary on a free loopback port, without persistence,
// stopped when the test ends. It imports only the standard library.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Start runs redis-server with extra (more "--name value" arguments) until
// the test ends and returns its address. It skips the test, loudly, when
// redis-server is not installed, and fails it when five attempts to start
// one fail (a port taken between choosing it and binding it).
func Start(t testing.TB, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("!!! redis-server not found: differential test SKIPPED !!!")
	}
	var lastErr error
	for range 5 {
		addr, err := try(t, bin, extra)
		if err == nil {
			return addr
		}
		lastErr = err
	}
	t.Fatalf("cannot start redis-server: %v", lastErr)
	return ""
}

func try(t testing.TB, bin string, extra []string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--daemonize", "no", "--loglevel", "warning"}, extra...)
	proc := exec.Command(bin, args...)
	var out bytes.Buffer
	proc.Stdout, proc.Stderr = &out, &out
	if err := proc.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() { proc.Wait(); close(exited) }()
	stop := func() {
		proc.Process.Kill()
		<-exited
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return "", fmt.Errorf("redis-server exited: %s", out.String())
		default:
		}
		if ping(addr) {
			t.Cleanup(stop)
			return addr, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	return "", fmt.Errorf("redis-server on %s did not answer PING: %s", addr, out.String())
}

// ping reports whether addr answers PING: +PONG, or NOAUTH from a server
// started with a password.
func ping(addr string) bool {
	nc, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Second))
	if _, err := nc.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	return err == nil && (line == "+PONG\r\n" || strings.HasPrefix(line, "-NOAUTH"))
}
