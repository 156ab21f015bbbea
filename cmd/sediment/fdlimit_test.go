package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestOpenFilesLimit: under a low 'ulimit -n' the server lowers maxclients
// to fit (as Redis does, with its warning), and refuses to start when not
// one client fits.
func TestOpenFilesLimit(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	bin := buildBinary(t)
	out, err := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n 100 && exec %s --dir %s --port %d --nats-listen off", bin, t.TempDir(), freePort(t))).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not enough for the server to start") {
		t.Fatalf("start under ulimit -n 100: %v\n%s", err, out)
	}
	port := freePort(t)
	cmd := exec.Command("sh", "-c", fmt.Sprintf("ulimit -n 300 && exec %s --dir %s --port %d --nats-listen off --log-level warn", bin, t.TempDir(), port))
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: 20})
	defer c.Close()
	v, err := c.ConfigGet(context.Background(), "maxclients").Result()
	if err != nil || v["maxclients"] != "140" {
		t.Fatalf("CONFIG GET maxclients under ulimit -n 300 = %v, %v; want 140 (300 less 160 reserved)", v, err)
	}
}
