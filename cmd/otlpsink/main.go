// Command otlpsink is an OTLP/HTTP endpoint that accepts and discards
// every export: the collector stand-in of `scripts/bench.sh otel`, so that
// a traced Sediment pays its real export cost (protobuf encoding, HTTP)
// with nothing else on the machine. It prints what it received when it
// gets SIGTERM or SIGINT.
//
//	otlpsink -addr 127.0.0.1:4318
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4318", "listen address")
	flag.Parse()
	var requests, bytes atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		requests.Add(1)
		bytes.Add(n)
		// An empty Export*ServiceResponse: full success.
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go srv.Serve(ln)
	<-ctx.Done()
	srv.Close()
	fmt.Printf("otlpsink: %d requests, %d bytes\n", requests.Load(), bytes.Load())
}
