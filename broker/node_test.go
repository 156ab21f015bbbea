package broker

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeRedis runs clients/node/check.mjs: node-redis 6 in its default
// mode, which opens with HELLO 3 and does not fall back to RESP2, against
// a test server (typed RESP3 replies, MULTI, pub/sub, a served BLPOP). It
// needs node and npm (the npm registry reachable for `npm ci`); without
// them it is skipped, loudly.
func TestNodeRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: npm ci takes seconds")
	}
	node, err1 := osexec.LookPath("node")
	npm, err2 := osexec.LookPath("npm")
	if err1 != nil || err2 != nil {
		t.Skip("SKIPPED: node and npm are not on PATH; node-redis 6 (RESP3) is not checked")
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "check.mjs"} {
		b, err := os.ReadFile(filepath.Join("..", "clients", "node", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := osexec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		// The registry out of reach is this machine's, not Sediment's.
		for _, net := range []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", "network"} {
			if strings.Contains(string(out), net) {
				t.Skipf("SKIPPED: npm cannot reach its registry; node-redis 6 (RESP3) is not checked: %v\n%s", err, out)
			}
		}
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	ts := newTestServer(t)
	check := osexec.CommandContext(ctx, node, "check.mjs", ts.addr)
	check.Dir = dir
	out, err := check.CombinedOutput()
	if err != nil || string(out) != "node-redis ok\n" {
		t.Fatalf("node check.mjs: %v\n%s", err, out)
	}
}
