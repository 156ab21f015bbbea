package broker

import (
	"strings"
	"testing"
)

func init() {
	pubsubCases = append(pubsubCases, psCase{name: "client kill", conns: 3, steps: []psStep{
		on(0, "CLIENT", "KILL", "1.2.3.4:5"),
		on(0, "CLIENT", "KILL", "ID", "999999"),
		on(0, "CLIENT", "KILL", "ID", "x"),
		on(0, "CLIENT", "KILL", "ID", "0"),
		on(0, "CLIENT", "KILL", "TYPE", "foo"),
		on(0, "CLIENT", "KILL", "SKIPME", "maybe"),
		on(0, "CLIENT", "KILL", "FOO", "bar"),
		on(0, "CLIENT", "KILL", "ID", "1", "SKIPME"),
		on(0, "CLIENT", "KILL"),
		on(0, "CLIENT", "KILL", "ID"),
		on(0, "CLIENT", "KILL", "USER", "nobody"),
		on(0, "CLIENT", "KILL", "ID", "$ID1", "USER", "default"),
		on(0, "CLIENT", "KILL", "ID", "$ID0"),
		on(0, "CLIENT", "KILL", "ID", "$ID2", "TYPE", "pubsub"),
		on(2, "SUBSCRIBE", "x"),
		on(0, "CLIENT", "KILL", "ID", "$ID2", "TYPE", "pubsub"),
		on(0, "CLIENT", "KILL", "ID", "$ID0", "SKIPME", "no"),
	}})
}

// TestClientKill: the address forms and SKIPME, which the differential
// scenario cannot name (the servers' client addresses differ).
func TestClientKill(t *testing.T) {
	ts := newTestServer(t)
	a, b := confDial(t, ts.addr), confDial(t, ts.addr)
	// b's PING is answered once the server has registered b: without it,
	// the KILL could name a connection not accepted yet.
	if _, err := b.do("PING"); err != nil {
		t.Fatal(err)
	}
	if r, err := a.do("CLIENT", "KILL", b.nc.LocalAddr().String()); err != nil || r.str != "OK" {
		t.Fatalf("CLIENT KILL addr = %v, %v", r, err)
	}
	if _, err := b.do("PING"); err == nil {
		t.Fatal("the killed client is still served")
	}
	c := confDial(t, ts.addr)
	if r, err := a.do("CLIENT", "KILL", "ADDR", c.nc.LocalAddr().String(), "LADDR", ts.addr); err != nil || r.n != 1 {
		t.Fatalf("CLIENT KILL ADDR LADDR = %v, %v", r, err)
	}
	// SKIPME yes (the default) spares the caller; TYPE normal matches it.
	if r, err := a.do("CLIENT", "KILL", "TYPE", "normal"); err != nil || r.kind != confInt {
		t.Fatalf("CLIENT KILL TYPE normal = %v, %v", r, err)
	}
	if r, err := a.do("PING"); err != nil || r.str != "PONG" {
		t.Fatalf("the caller was killed: %v, %v", r, err)
	}
}

// TestClientListFields: CLIENT INFO/LIST lines carry Redis's field names
// in Redis's order (those Sediment keeps: a subsequence of redis-server's
// line, then Redis 7.2's lib-name and lib-ver), and their values follow
// the connection's state.
func TestClientListFields(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	keys := func(line string) []string {
		var out []string
		for _, f := range strings.Fields(line) {
			k, _, _ := strings.Cut(f, "=")
			out = append(out, k)
		}
		return out
	}
	rr, _ := confDial(t, redisAddr).do("CLIENT", "INFO")
	want := append(keys(rr.str), "lib-name", "lib-ver")
	c := confDial(t, ts.addr)
	sr, _ := c.do("CLIENT", "INFO")
	got := keys(sr.str)
	i := 0
	for _, k := range got {
		for i < len(want) && want[i] != k {
			i++
		}
		if i == len(want) {
			t.Fatalf("CLIENT INFO fields %v are not in Redis's order %v (at %q)", got, want, k)
		}
	}
	field := func(line, k string) string {
		for _, f := range strings.Fields(line) {
			if kk, v, _ := strings.Cut(f, "="); kk == k {
				return v
			}
		}
		return "<missing>"
	}
	check := func(args []string, k, v string) {
		t.Helper()
		r, err := c.do("CLIENT", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		if got := field(r.str, k); got != v {
			t.Fatalf("after %v: %s=%s, want %s (%s)", args, k, got, v, r.str)
		}
	}
	check(nil, "flags", "N")
	check(nil, "cmd", "client|info")
	check(nil, "multi", "-1")
	c.do("CLIENT", "TRACKING", "ON", "BCAST")
	check([]string{"TRACKING ON BCAST"}, "flags", "tB")
	c.do("CLIENT", "SETINFO", "LIB-NAME", "mylib")
	check([]string{"SETINFO"}, "lib-name", "mylib")
	other := confDial(t, ts.addr)
	other.do("MULTI")
	other.do("SET", "k", "v")
	r, _ := c.do("CLIENT", "LIST")
	for _, l := range strings.Split(strings.TrimSpace(r.str), "\n") {
		if field(l, "cmd") == "set" {
			if field(l, "flags") != "x" || field(l, "multi") != "1" {
				t.Fatalf("a client in MULTI with one queued command: %s", l)
			}
			return
		}
	}
	t.Fatalf("no client in MULTI in CLIENT LIST:\n%s", r.str)
}
