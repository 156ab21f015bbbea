package broker

import (
	"bytes"
	"sort"
	"strings"
	"testing"
)

// FuzzDispatch sends fuzzed argument lists, named after real commands of the
// table, to a real server and checks that each gets exactly one well-formed
// reply and that the server keeps serving. Blocking commands are left out:
// a fuzzed BLOCK 0 would wait forever, by design; so are the (un)subscribe
// commands, which reply once per name and change what PING replies
// (pubsub_test.go covers them); SHUTDOWN, which stops the server, CLIENT
// KILL, which may close the connection, CLIENT PAUSE, which holds every
// client for as long as it says, and CLIENT REPLY, which drops replies,
// are left out too (client_pause_test.go covers both), as are MULTI (the
// PING after it is queued) and CONFIG SET of maxclients,
// client-output-buffer-limit and timeout, which could refuse or close the
// fuzzer's own connections.
//
//	go test ./broker -run '^$' -fuzz FuzzDispatch -fuzztime 30s
func FuzzDispatch(f *testing.F) {
	var names []string
	for name, c := range commandTable {
		if c.flags&flagBlocking == 0 && name != "quit" && name != "shutdown" && name != "multi" && !strings.HasSuffix(name, "subscribe") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	seeds := []string{
		"s\x001-1\x00f\x00v", "s\x00*\x00f", "s\x00MAXLEN\x00~\x00-1\x00*\x00a\x00b",
		"s\x00-\x00+\x00COUNT\x000", "CREATE\x00s\x00g\x00$\x00MKSTREAM", "s\x00g\x00IDLE\x001\x00-\x00+\x0010\x00c",
		"k\x00v\x00EX\x0010\x00GET", "0\x00MATCH\x00*\x00COUNT\x001000", "\xff\x00\x00\r\n",
	}
	for i, s := range seeds {
		f.Add(uint8(i*7), []byte(s))
	}
	ts := newTestServer(f)
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		args := []string{names[int(which)%len(names)]}
		if args[0] == "client" && (bytes.Contains(bytes.ToUpper(raw), []byte("KILL")) ||
			bytes.Contains(bytes.ToUpper(raw), []byte("PAUSE")) || bytes.Contains(bytes.ToUpper(raw), []byte("REPLY"))) {
			return // closes the connection, holds the server, drops replies
		}
		if args[0] == "config" {
			up := bytes.ToUpper(raw)
			for _, p := range []string{"MAXCLIENTS", "CLIENT-OUTPUT-BUFFER-LIMIT", "TIMEOUT"} {
				if bytes.Contains(up, []byte(p)) {
					return // would refuse or close the fuzzer's own connections
				}
			}
		}
		if len(raw) > 0 {
			for _, a := range bytes.Split(raw, []byte{0}) {
				args = append(args, string(a))
			}
		}
		c := confDial(t, ts.addr)
		if _, err := c.do(args...); err != nil {
			t.Fatalf("%q: no well-formed reply: %v", args, err)
		}
		// Exactly one reply: the next command's reply is the PONG.
		r, err := c.do("PING")
		if err != nil || r.String() != (confReply{kind: confSimple, str: "PONG"}).String() {
			t.Fatalf("after %q: PING = %v, %v", args, r, err)
		}
	})
}
