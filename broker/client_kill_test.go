package broker

import (
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
