package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/feed"
)

// feedConfig is `sediment feed`'s flags.
type feedConfig struct {
	url, user, password, prefix, typ, key string
	db                                    int
	from                                  uint64
	hasFrom                               bool
	snapshot                              bool
}

// runFeed is `sediment feed [--nats-url URL] [--user U --password P]
// [--feed-prefix P] [--db N] [--type T] [--key K] [--from SEQ |
// --snapshot]`: it prints the change feed (docs/change-feed.md) one event
// a line, as it comes, until interrupted. With --from it first prints the
// retained records from SEQ on (the <prefix>.replay endpoint), then the
// live ones after them, none twice: it subscribes before it asks for the
// replay. With --snapshot it first prints a snapshot of the keys the
// filters select at a sequence S (the <prefix>.snapshot endpoint), then
// the live events after S: it subscribes before it takes the snapshot,
// and drops the live events of S and before.
func runFeed(args []string, getenv func(string) string, out io.Writer, done <-chan struct{}) error {
	var c feedConfig
	fs := flag.NewFlagSet("sediment feed", flag.ContinueOnError)
	fs.StringVar(&c.url, "nats-url", "nats://127.0.0.1:4222", "the NATS server the change feed is on (the embedded one by default)")
	fs.StringVar(&c.user, "user", "", "NATS user (feed, with --nats-feed-password on the server)")
	fs.StringVar(&c.password, "password", "", "NATS password")
	fs.StringVar(&c.prefix, "feed-prefix", feed.DefaultPrefix, "the server's --feed-prefix")
	fs.IntVar(&c.db, "db", -1, "only this logical db")
	fs.StringVar(&c.typ, "type", "", "only this type: string, hash, set, zset, list, stream, key or db")
	fs.StringVar(&c.key, "key", "", "only this key")
	from := fs.String("from", "", "print the retained records from this sequence number on first (0: the oldest retained)")
	fs.BoolVar(&c.snapshot, "snapshot", false, "print a snapshot of the keys first, then the changes after it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.snapshot && *from != "" {
		return errors.New("--from and --snapshot: give one")
	}
	if *from != "" {
		n, err := strconv.ParseUint(*from, 10, 64)
		if err != nil {
			return fmt.Errorf("--from: want a sequence number, got %q", *from)
		}
		c.from, c.hasFrom = n, true
	}
	if c.password == "" {
		c.password = getenv("SEDIMENT_NATS_FEED_PASSWORD")
	}
	opts := []nats.Option{nats.Name("sediment feed")}
	if c.user != "" {
		opts = append(opts, nats.UserInfo(c.user, c.password))
	}
	nc, err := nats.Connect(c.url, opts...)
	if err != nil {
		return fmt.Errorf("connecting to NATS at %s: %w", c.url, err)
	}
	defer nc.Close()
	// The live events are kept, however many, while the replay runs: a
	// bounded channel would drop them (nats.go's slow-consumer rule).
	var (
		mu      sync.Mutex
		pending []*nats.Msg
	)
	arrived := make(chan struct{}, 1)
	if _, err := nc.Subscribe(c.subject(), func(m *nats.Msg) {
		mu.Lock()
		pending = append(pending, m)
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default:
		}
	}); err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	var next uint64 // the first sequence not printed yet
	switch {
	case c.hasFrom:
		if next, err = c.replay(nc, out); err != nil {
			return err
		}
	case c.snapshot:
		if next, err = c.snapshotThen(nc, out); err != nil {
			return err
		}
	}
	for {
		mu.Lock()
		batch := pending
		pending = nil
		mu.Unlock()
		for _, m := range batch {
			msg, err := feed.Decode(m.Data)
			if err != nil {
				fmt.Fprintf(out, "undecodable message on %s: %v\n", m.Subject, err)
				continue
			}
			if msg.Seq < next || !c.keep(msg) {
				continue // printed by the replay, or in the snapshot
			}
			fmt.Fprintln(out, formatEvent(msg))
		}
		select {
		case <-done:
			return nil
		case <-arrived:
		}
	}
}

// subject is the NATS subject that carries what the filters select.
func (c feedConfig) subject() string {
	db, typ, key := "*", "*", ">"
	if c.db >= 0 {
		db = strconv.Itoa(c.db)
	}
	if c.typ != "" {
		typ = c.typ
	}
	if c.key != "" {
		key = feed.KeyToken([]byte(c.key))
	}
	if c.db < 0 && c.typ == "" && c.key == "" {
		return c.prefix + ".chg.>" // FLUSHALL's subject has no db number
	}
	return c.prefix + ".chg." + db + "." + typ + "." + key
}

// keep applies the filters to a replayed event (the live ones come
// filtered by their subject).
func (c feedConfig) keep(m feed.Message) bool {
	switch {
	case c.db >= 0 && (m.DB == nil || *m.DB != c.db):
		return false
	case c.typ != "" && m.Type != c.typ:
		return false
	case c.key != "":
		k, err := m.KeyBytes()
		return err == nil && string(k) == c.key
	}
	return true
}

// replay prints the retained records from c.from on, page by page, and
// returns the sequence after the last one.
func (c feedConfig) replay(nc *nats.Conn, out io.Writer) (uint64, error) {
	from, fromI := c.from, 0
	for {
		body, _ := json.Marshal(map[string]any{"from": from, "i": fromI, "count": feed.ReplayMax, "type": c.typ})
		m, err := nc.Request(c.prefix+".replay", body, 10*time.Second)
		if err != nil {
			return 0, fmt.Errorf("replay from %d: %w", from, err)
		}
		var rep struct {
			Next   uint64            `json:"next"`
			NextI  int               `json:"next_i"`
			Events []json.RawMessage `json:"events"`
			Error  string            `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			return 0, fmt.Errorf("replay from %d: %w", from, err)
		}
		if rep.Error != "" {
			return 0, errors.New("replay: " + rep.Error)
		}
		for _, e := range rep.Events {
			msg, err := feed.Decode(e)
			if err == nil && c.keep(msg) {
				fmt.Fprintln(out, formatEvent(msg))
			}
		}
		if rep.Next == from && rep.NextI == fromI { // past the newest record: nothing more
			return rep.Next, nil
		}
		from, fromI = rep.Next, rep.NextI
	}
}

// snapshotThen prints a snapshot of the keys the filters select, page by
// page, and returns the sequence after the snapshot's: the first whose
// live events it must print. A page whose reply is lost is asked for
// again with the same cursor, which reads it again.
func (c feedConfig) snapshotThen(nc *nats.Conn, out io.Writer) (uint64, error) {
	req := map[string]any{"count": feed.SnapshotMax}
	if c.typ != "" {
		req["type"] = c.typ
	}
	if c.db >= 0 {
		req["db"] = c.db
	}
	if c.key != "" {
		req["match"] = globQuote(c.key)
	}
	for {
		body, _ := json.Marshal(req)
		var m *nats.Msg
		var err error
		for try := 0; try < 3; try++ {
			if m, err = nc.Request(c.prefix+".snapshot", body, 30*time.Second); !errors.Is(err, nats.ErrTimeout) {
				break
			}
		}
		if err != nil {
			return 0, fmt.Errorf("snapshot: %w", err)
		}
		var rep struct {
			Seq    uint64            `json:"seq"`
			Cursor string            `json:"cursor"`
			Events []json.RawMessage `json:"events"`
			Error  string            `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			return 0, fmt.Errorf("snapshot: %w", err)
		}
		if rep.Error != "" {
			return 0, errors.New("snapshot: " + rep.Error)
		}
		for _, e := range rep.Events {
			msg, err := feed.Decode(e)
			if err == nil && c.keep(msg) {
				fmt.Fprintln(out, formatEvent(msg))
			}
		}
		if rep.Cursor == "0" || rep.Cursor == "" {
			return rep.Seq + 1, nil
		}
		req = map[string]any{"cursor": rep.Cursor, "count": feed.SnapshotMax}
	}
}

// globQuote returns a glob pattern that matches s alone.
func globQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// formatEvent is one line of `sediment feed`: sequence and place in the
// record, time, db, type, operation, key and arguments, binary bytes
// quoted as Go strings.
//
//	42 0/2 2026-11-27T08:00:00.123Z db=0 hash hset "user:1" "name" "Ada"
//
// A snapshot's event has "snap" in place of its place in a record, and
// the time at which the snapshot was taken:
//
//	41 snap 2026-11-27T08:00:00.100Z db=0 hash hset "user:1" "name" "Bob"
func formatEvent(m feed.Message) string {
	var b strings.Builder
	place := fmt.Sprintf("%d/%d", m.I, m.N)
	if m.Snapshot {
		place = "snap"
	}
	fmt.Fprintf(&b, "%d %s %s", m.Seq, place, time.UnixMilli(m.Ms).UTC().Format("2006-01-02T15:04:05.000Z"))
	if m.DB != nil {
		fmt.Fprintf(&b, " db=%d", *m.DB)
	}
	fmt.Fprintf(&b, " %s %s", m.Type, m.Op)
	if k, err := m.KeyBytes(); err == nil && (m.Key != nil || m.Key64 != "") {
		b.WriteString(" " + strconv.Quote(string(k)))
	}
	switch args, err := m.ArgBytes(); {
	case m.Meta != nil: // set-meta: the decoded metadata, not its encoding
		fmt.Fprintf(&b, " type=%s", m.Meta.Type)
		if m.Meta.ExpireAtMs != 0 {
			fmt.Fprintf(&b, " expire-at=%s", time.UnixMilli(m.Meta.ExpireAtMs).UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		if v, err := base64.StdEncoding.DecodeString(m.Meta.Value64); err == nil && m.Meta.Value64 != "" {
			b.WriteString(" value=" + strconv.Quote(string(v)))
		}
	case err == nil:
		for _, a := range args {
			b.WriteString(" " + strconv.Quote(string(a)))
		}
	}
	if m.Reason != "" {
		b.WriteString(" reason=" + m.Reason)
	}
	if m.Truncated {
		b.WriteString(" (truncated)")
	}
	return b.String()
}
