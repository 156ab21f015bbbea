package feed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/feed"
	"github.com/sediment-dev/sediment/materialize"
)

func strMeta(v string) codec.Meta { return codec.Meta{Type: codec.TypeString, Value: []byte(v)} }

// TestPublisherRetryKeepsTheDBMap: a record holding SWAPDB and a later
// event whose publish fails once is published again from the map it
// started with: the swap is not applied twice.
func TestPublisherRetryKeepsTheDBMap(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var (
		mu     sync.Mutex
		got    []string
		failed bool
	)
	p := &feed.Publisher{Store: s, Prefix: "p", Publish: func(subj string, _ []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if subj == "p.chg.0.string.k" && !failed {
			failed = true
			return errors.New("injected")
		}
		got = append(got, subj)
		return nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(20 * time.Millisecond) // Run takes its place
	write := func(evs ...codec.Event) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return evs, nil }); err != nil {
			t.Fatal(err)
		}
	}
	// EXEC: SWAPDB 0 1, then SET k in (logical) db 0, now storage db 1.
	write(codec.SwapDBEvent(0, 1), codec.SetMetaEvent(1, []byte("k"), strMeta("v"), 0))
	write(codec.SetMetaEvent(1, []byte("k2"), strMeta("v"), 0))
	want := []string{"p.chg.0.db.swapdb", "p.chg.0.db.swapdb", "p.chg.0.string.k", "p.chg.0.string.k2"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("published %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("published %v, want %v (the record is published again whole, from its own map)", got, want)
		}
	}
}

// TestPublisherDelayedXAdd: a delayed entry's xadd keeps its delay tail as
// its last argument, with and without a trace trailer before it; the trace
// goes to the message header, out of the payload.
func TestPublisherDelayedXAdd(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type msg struct {
		payload     []byte
		traceparent string
	}
	got := make(chan msg, 4)
	p := &feed.Publisher{Store: s, Prefix: "p",
		Publish: func(_ string, b []byte) error { got <- msg{payload: b}; return nil },
		PublishTraced: func(_ string, b []byte, tp string) error {
			got <- msg{payload: b, traceparent: tp}
			return nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(20 * time.Millisecond) // Run takes its place
	const due = 1700000000123
	tc := codec.TraceContext{TraceID: [16]byte{1}, SpanID: [8]byte{2}, Flags: 1}
	plain := codec.XAddWithDelay(codec.XAddEvent(0, []byte("x"), codec.ID{Ms: 1}, [][]byte{[]byte("f"), []byte("v")}), due)
	traced := codec.XAddWithTrace(codec.XAddWithDelay(codec.XAddEvent(0, []byte("x"), codec.ID{Ms: 2}, [][]byte{[]byte("f"), []byte("v")}), due), tc)
	for _, e := range []codec.Event{plain, traced} {
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) { return []codec.Event{e}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i, wantTP := range []string{"", tc.String()} {
		var m msg
		select {
		case m = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d not published", i)
		}
		if m.traceparent != wantTP {
			t.Errorf("message %d: traceparent %q, want %q", i, m.traceparent, wantTP)
		}
		dm, err := feed.Decode(m.payload)
		if err != nil {
			t.Fatal(err)
		}
		args, err := dm.ArgBytes()
		if err != nil {
			t.Fatal(err)
		}
		want := string(codec.AppendDelayTail(nil, due))
		if len(args) != 4 || string(args[3]) != want {
			t.Errorf("message %d: args %q, want the ID, f, v and the delay tail %q", i, args, want)
		}
	}
}

// TestPublisherStartTakesItsPlace: Run publishes the records committed
// after Start, those written before Run's goroutine runs among them, and
// none before.
func TestPublisherStartTakesItsPlace(t *testing.T) {
	s, err := materialize.Open(materialize.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(key string) {
		t.Helper()
		if _, err := s.Write(func(*materialize.View) ([]codec.Event, error) {
			return []codec.Event{codec.SetMetaEvent(0, []byte(key), strMeta("v"), 0)}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		got []string
	)
	p := &feed.Publisher{Store: s, Prefix: "p", Publish: func(subj string, _ []byte) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, subj)
		return nil
	}}
	write("before")
	p.Start()
	write("after")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for p.Published() < s.LastSeq() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "p.chg.0.string.after" {
		t.Fatalf("published %v, want only the write after Start", got)
	}
}
