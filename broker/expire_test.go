package broker

import (
	"testing"
	"time"
)

// TestStreamActiveExpiry gives a stream with a consumer group a TTL; once the
// (injected) clock passes it, active expiry deletes the stream with all its
// sub-keys, and a blocked XREADGROUP reader is unblocked as for DEL.
func TestStreamActiveExpiry(t *testing.T) {
	clk := newFakeClock()
	ts := newTestServer(t, withClock(clk))
	admin := ts.client(t)
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	mustDo(t, admin, "XGROUP", "CREATE", "s", "g", "$")
	if n := mustDo(t, admin, "EXPIRE", "s", "10"); n != int64(1) {
		t.Fatalf("EXPIRE = %v", n)
	}
	ch := goRead(xreadGroupBlock(ts.client(t), "g", "c", 10*time.Second, "s", ">"))
	waitBlocked(t, admin, 1)
	clk.Advance(10*time.Second + time.Millisecond)
	r := awaitRead(t, ch)
	if r.err == nil || r.err.Error() != "UNBLOCKED the stream key no longer exists" {
		t.Fatalf("blocked XREADGROUP after expiry = %v, %v", r.res, r.err)
	}
	if n := mustDo(t, admin, "EXISTS", "s"); n != int64(0) {
		t.Fatalf("EXISTS after expiry = %v", n)
	}
	// Recreated, the stream starts empty: no entries, no group.
	mustDo(t, admin, "XADD", "s", "1-1", "f", "v")
	if n := mustDo(t, admin, "XLEN", "s"); n != int64(1) {
		t.Fatalf("XLEN of the recreated stream = %v", n)
	}
	mustErr(t, admin, "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option",
		"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
}
