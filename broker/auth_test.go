package broker

import (
	"net"
	"strings"
	"testing"

	"github.com/sediment-dev/sediment/internal/redistest"
)

// authScripts run on fresh connections to redis-server --requirepass
// secret and to Sediment with RequirePass "secret"; every reply must be
// equal.
var authScripts = [][][]string{
	{
		{"GET", "k"},
		{"SET", "k", "v"},
		{"PING"},
		{"NOSUCH"},
		{"GET"},
		{"MULTI"},
		{"HELLO"},
		{"HELLO", "3"},
		{"HELLO", "3", "AUTH", "default", "wrong"},
		{"AUTH", "wrong"},
		{"AUTH", "bob", "secret"},
		{"AUTH", "a", "b", "c"},
		{"AUTH"},
		{"GET", "k"},
		{"AUTH", "secret"},
		{"SET", "k", "v"},
		{"GET", "k"},
		{"RESET"},
		{"GET", "k"},
		{"AUTH", "default", "secret"},
		{"GET", "k"},
		{"CONFIG", "GET", "requirepass"},
		{"RESET"},
		{"HELLO", "2", "AUTH", "default", "secret", "SETNAME", "me"},
		{"CLIENT", "GETNAME"},
		{"GET", "k"},
	},
	{
		{"HELLO", "3", "AUTH", "default", "secret"},
		{"GET", "k"},
		{"CONFIG", "SET", "requirepass", "other"},
		{"GET", "k"}, // still authenticated
		{"AUTH", "secret"},
		{"AUTH", "other"},
		{"CONFIG", "SET", "requirepass", "secret"},
		{"QUIT"},
	},
	{
		{"SUBSCRIBE", "c"},
		{"QUIT"},
	},
}

// TestAuthConformance compares authentication with redis-server's, with a
// password set and (authNoPassScripts) without one.
func TestAuthConformance(t *testing.T) {
	run := func(t *testing.T, redisAddr, sedimentAddr string, scripts [][][]string) {
		for i, script := range scripts {
			rc, sc := confDial(t, redisAddr), confDial(t, sedimentAddr)
			for j, args := range script {
				want, err1 := rc.do(args...)
				got, err2 := sc.do(args...)
				if err1 != nil || err2 != nil {
					t.Fatalf("script %d step %d %v: redis %v, sediment %v", i, j+1, args, err1, err2)
				}
				want, got = (&confNormalizer{ids: map[string]string{}}).walk(want), (&confNormalizer{ids: map[string]string{}}).walk(got)
				if !want.equal(got) {
					t.Fatalf("script %d step %d %v:\n--- redis:\n%s\n--- sediment:\n%s", i, j+1, args, want, got)
				}
			}
		}
	}
	t.Run("requirepass", func(t *testing.T) {
		redisAddr := redistest.Start(t, "--requirepass", "secret")
		ts := newTestServer(t, func(o *Options) { o.RequirePass = "secret" })
		run(t, redisAddr, ts.addr, authScripts)
	})
	t.Run("nopass", func(t *testing.T) {
		redisAddr := confStartRedis(t)
		ts := newTestServer(t)
		run(t, redisAddr, ts.addr, [][][]string{{
			{"AUTH", "x"},
			{"AUTH", "default", "x"},
			{"AUTH", "bob", "x"},
			{"HELLO", "3", "AUTH", "default", "anything"},
			{"HELLO", "2", "AUTH", "nobody", "x"},
			{"CONFIG", "GET", "requirepass"},
			{"GET", "k"},
		}})
	})
}

// TestProtectedMode connects from a non-loopback address of this machine
// to a server bound to every address: with no password it is refused with
// Redis's DENIED error; with a password, or protected mode off, it is
// served.
func TestProtectedMode(t *testing.T) {
	ip := nonLoopbackIP(t)
	for _, tc := range []struct {
		name   string
		mod    func(*Options)
		denied bool
	}{
		{"no password", func(o *Options) {}, true},
		{"password", func(o *Options) { o.RequirePass = "secret" }, false},
		{"protected mode off", func(o *Options) { o.ProtectedModeOff = true }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServerOn(t, "0.0.0.0:0", tc.mod)
			_, port, _ := net.SplitHostPort(ts.addr)
			c := confDial(t, net.JoinHostPort(ip, port))
			r, err := c.do("PING")
			if tc.denied {
				if err != nil || r.kind != confError || !strings.HasPrefix(r.str, "DENIED Redis is running in protected mode") {
					t.Fatalf("PING from %s = %v, %v; want DENIED", ip, r, err)
				}
				return
			}
			if err != nil || r.kind == confError && !strings.HasPrefix(r.str, "NOAUTH") || r.kind != confError && r.str != "PONG" {
				t.Fatalf("PING from %s = %v, %v; want served", ip, r, err)
			}
			// Loopback is always served.
			lc := confDial(t, ts.addr)
			if r, err := lc.do("PING"); err != nil || r.kind == confError && !strings.HasPrefix(r.str, "NOAUTH") {
				t.Fatalf("PING from loopback = %v, %v", r, err)
			}
		})
	}
	t.Run("loopback without password", func(t *testing.T) {
		ts := newTestServer(t)
		if r, err := confDial(t, ts.addr).do("PING"); err != nil || r.str != "PONG" {
			t.Fatalf("PING = %v, %v", r, err)
		}
	})
}

// nonLoopbackIP returns an IPv4 address of this machine that is not
// loopback, or skips the test.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("SKIPPED: no non-loopback IPv4 address on this machine; protected mode not checked from outside")
	return ""
}
