package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/broker"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFeedCommand: `sediment feed --from 0 --type string` prints the
// retained string events first, then the live ones, each once, one line
// an event, and nothing of other types.
func TestFeedCommand(t *testing.T) {
	natsPort := freePort(t)
	srv, err := broker.New(broker.Options{Dir: t.TempDir(), NATSListen: "127.0.0.1:" + strconv.Itoa(natsPort)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	c := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), Protocol: 2, DisableIdentity: true})
	defer c.Close()
	ctx := context.Background()
	c.Set(ctx, "before", "1", 0)
	c.HSet(ctx, "h", "f", "v")

	var out syncBuffer
	done := make(chan struct{})
	ended := make(chan error, 1)
	go func() {
		ended <- runFeed([]string{"--nats-url", "nats://127.0.0.1:" + strconv.Itoa(natsPort), "--from", "0", "--type", "string"},
			func(string) string { return "" }, &out, done)
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), `"before"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no replayed event after 10 s: %q", out.String())
		}
	}
	c.Set(ctx, "after", "2", 0)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(out.String(), `"after"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no live event after 10 s: %q", out.String())
		}
	}
	close(done)
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], ` db=0 string set-meta "before" type=string value="1"`) ||
		!strings.HasPrefix(lines[0], "1 0/1 ") || !strings.Contains(lines[1], `"after" type=string value="2"`) {
		t.Fatalf("sediment feed printed:\n%s", out.String())
	}
}
