package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// TestRueidisClientSideCaching uses rueidis in its default mode (RESP3,
// CLIENT TRACKING ON OPTIN at connect) with client-side caching: a cached
// GET is served from the client's cache until another client changes the
// key, and then the invalidation makes the next GET read the new value.
func TestRueidisClientSideCaching(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.addr}, DisableRetry: true})
	if err != nil {
		t.Fatalf("rueidis connect (HELLO 3, CLIENT TRACKING ON OPTIN): %v", err)
	}
	defer c.Close()
	other := ts.client(t)
	mustDo(t, other, "SET", "k", "v1")

	get := func() (string, bool) {
		t.Helper()
		r := c.DoCache(ctx, c.B().Get().Key("k").Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("GET k: %v", err)
		}
		return v, r.IsCacheHit()
	}
	if v, hit := get(); v != "v1" || hit {
		t.Fatalf("first GET = %q (hit %v), want v1 from the server", v, hit)
	}
	if v, hit := get(); v != "v1" || !hit {
		t.Fatalf("second GET = %q (hit %v), want v1 from the cache", v, hit)
	}
	mustDo(t, other, "SET", "k", "v2")
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, hit := get()
		if v == "v2" && !hit {
			break
		}
		if v != "v1" || !hit || time.Now().After(deadline) {
			t.Fatalf("GET after the change = %q (hit %v), want v2 from the server once invalidated", v, hit)
		}
		time.Sleep(time.Millisecond)
	}
	if v, hit := get(); v != "v2" || !hit {
		t.Fatalf("GET = %q (hit %v), want v2 from the cache again", v, hit)
	}
	// A hash read through the cache, changed by another client.
	mustDo(t, other, "HSET", "h", "f", "1")
	hget := func() (string, bool) {
		r := c.DoCache(ctx, c.B().Hget().Key("h").Field("f").Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil {
			t.Fatalf("HGET: %v", err)
		}
		return v, r.IsCacheHit()
	}
	hget()
	if _, hit := hget(); !hit {
		t.Fatal("HGET not cached")
	}
	mustDo(t, other, "HSET", "h", "f", "2")
	deadline = time.Now().Add(5 * time.Second)
	for v, _ := hget(); v != "2"; v, _ = hget() {
		if time.Now().After(deadline) {
			t.Fatalf("HGET still %q after the change", v)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTrackingNoStaleCache reads keys through rueidis's client-side cache
// while another client keeps changing them: once the writes stop, every
// cached read must come to the last value written. An invalidation lost
// between a read and a concurrent write (the key remembered after the read,
// or invalidated before the write was visible) leaves a stale value cached
// for the cache's whole TTL, and fails this.
func TestTrackingNoStaleCache(t *testing.T) {
	ts := newTestServer(t)
	ctx := context.Background()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ts.addr}, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	writer := ts.client(t)
	const keys, rounds = 8, 3000
	key := func(i int) string { return fmt.Sprint("k", i%keys) }
	for i := range keys {
		mustDo(t, writer, "SET", key(i), "0")
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := c.DoCache(ctx, c.B().Get().Key(key(i)).Cache(), time.Hour).Error(); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := range rounds {
		mustDo(t, writer, "SET", key(i), fmt.Sprint(i))
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i := rounds - keys; i < rounds; i++ {
		want := fmt.Sprint(i)
		deadline := time.Now().Add(5 * time.Second)
		for {
			v, err := c.DoCache(ctx, c.B().Get().Key(key(i)).Cache(), time.Hour).ToString()
			if err != nil {
				t.Fatal(err)
			}
			if v == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s read through the cache = %q, the server holds %q: a stale value stayed cached", key(i), v, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}
