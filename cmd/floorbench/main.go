// Command floorbench measures the connection floor: what a RESP server
// costs per request before it does any work. It answers every multibulk
// request with a null bulk ("$-1\r\n", what GET of an absent key gets), in
// one of two shapes:
//
//   - goroutines: one goroutine per connection reading from a net.Conn,
//     as the broker serves connections (Go's network poller wakes the
//     goroutine whose socket is readable);
//   - epoll: one thread running an epoll loop over non-blocking sockets,
//     as redis-server does (Linux only).
//
// Run it beside redis-server and compare server CPU per request under
// redis-benchmark (docs/perf.md, "The connection floor: goroutines
// against an event loop"):
//
//	floorbench -mode epoll -port 7400 &
//	redis-benchmark -p 7400 -t get -c 50 -n 1000000 -r 100000
//
// It is a measuring tool, not a server: it parses only well-formed
// multibulk requests and never checks their commands.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
)

// nullBulk is the reply to every request.
const nullBulk = "$-1\r\n"

// parse consumes the complete multibulk requests at the front of in and
// appends one null bulk per request to out; it returns the bytes consumed
// and out. An incomplete request is left for the next read.
func parse(in, out []byte) (int, []byte) {
	used := 0
	for {
		p := in[used:]
		if len(p) == 0 || p[0] != '*' {
			return used, out
		}
		n, i, ok := number(p, 1)
		if !ok {
			return used, out
		}
		for a := 0; a < n && ok; a++ {
			if i >= len(p) || p[i] != '$' {
				ok = false
				break
			}
			var l int
			if l, i, ok = number(p, i+1); ok {
				i += l + 2
				ok = i <= len(p)
			}
		}
		if !ok {
			return used, out
		}
		used += i
		out = append(out, nullBulk...)
	}
}

// number reads the decimal number at p[i:] up to its "\r\n" and returns it
// and the index after the "\r\n"; ok is false when p ends first.
func number(p []byte, i int) (n, next int, ok bool) {
	for ; i < len(p) && p[i] != '\r'; i++ {
		n = n*10 + int(p[i]-'0')
	}
	if i+1 >= len(p) {
		return 0, 0, false
	}
	return n, i + 2, true
}

// serveGoroutines serves each connection of ln on a goroutine of its own.
func serveGoroutines(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			in, out := make([]byte, 0, 16<<10), make([]byte, 0, 16<<10)
			for {
				if len(in) == cap(in) {
					in = append(in, 0)[:len(in)]
				}
				n, err := c.Read(in[len(in):cap(in)])
				if err != nil {
					return
				}
				in = in[:len(in)+n]
				var used int
				used, out = parse(in, out[:0])
				in = in[:copy(in, in[used:])]
				if len(out) > 0 {
					if _, err := c.Write(out); err != nil {
						return
					}
				}
			}
		}()
	}
}

func main() {
	mode := flag.String("mode", "goroutines", "goroutines or epoll")
	port := flag.Int("port", 7400, "port to listen on (127.0.0.1)")
	flag.Parse()
	var err error
	switch *mode {
	case "goroutines":
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(*port)); err == nil {
			err = serveGoroutines(ln)
		}
	case "epoll":
		err = serveEpoll(*port)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	fmt.Fprintln(os.Stderr, "floorbench:", err)
	os.Exit(1)
}
