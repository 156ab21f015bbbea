package broker

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/feed"
)

func init() {
	register(
		&cmdSpec{name: "changes", arity: -2, flags: flagLoading | flagStale | flagNoMulti, group: "server", since: "sediment",
			summary: "Returns the change-feed events of the retained change log from a sequence number on, or a snapshot of the keys.", run: runChanges},
	)
}

// changesDefault is how many records CHANGES reads without COUNT.
const changesDefault = 100

// replayRequest is a CHANGES in its parsed form, and the JSON body of a
// request on <prefix>.replay (docs/change-feed.md, "Gaps and replay").
type replayRequest struct {
	From  uint64 `json:"from"`
	I     int    `json:"i,omitempty"` // the event of record From to start at (a NATS reply's next_i)
	Count int    `json:"count,omitempty"`
	Match string `json:"match,omitempty"`
	Type  string `json:"type,omitempty"`
	match bool   // CHANGES's MATCH was given (an empty pattern matches the empty key only)
}

func (r replayRequest) filter() feed.ReplayFilter {
	f := feed.ReplayFilter{Type: r.Type}
	if r.match || r.Match != "" {
		f.Match = []byte(r.Match)
	}
	return f
}

// errNotRetained is CHANGES's reply to a sequence older than the change
// log keeps.
func errNotRetained(e *feed.ErrNotRetained) wireError {
	return wireError(fmt.Sprintf("ERR change log record %d is not retained: the oldest retained is %d", e.From, e.Oldest))
}

// CHANGES FROM seq [COUNT count] [MATCH pattern] [TYPE type]: the events
// of the retained change-log records from seq on (0: the oldest retained),
// as the change feed publishes them. Reply: [next, [payload ...]], next
// being the sequence to ask for next, each payload the JSON a feed
// subscriber gets for the event (docs/change-feed.md). COUNT bounds the
// records read (default 100, at most feed.ReplayMax), as SCAN's COUNT
// bounds its work: a reply may hold fewer events than that, or none, with
// more to come. MATCH is a glob pattern on the key, TYPE the event type
// (string, hash, set, zset, list, stream, key, db).
//
// CHANGES SNAPSHOT is in snapshot.go.
func runChanges(x *exec) error {
	if equalFold(x.args[1], "SNAPSHOT") {
		return runChangesSnapshot(x)
	}
	if !equalFold(x.args[1], "FROM") {
		return errSyntax
	}
	if len(x.args) < 3 {
		return errWrongArgs("changes")
	}
	from, ok := parseInt(x.args[2])
	if !ok || from < 0 {
		return command.ErrNotInteger
	}
	req := replayRequest{From: uint64(from), Count: changesDefault}
	for i := 3; i < len(x.args); i += 2 {
		if i+1 >= len(x.args) {
			return errSyntax
		}
		v := x.args[i+1]
		switch {
		case equalFold(x.args[i], "COUNT"):
			n, ok := parseInt(v)
			if !ok || n < 1 {
				return errValueRange(1, feed.ReplayMax)
			}
			req.Count = int(min(n, feed.ReplayMax))
		case equalFold(x.args[i], "MATCH"):
			req.Match, req.match = string(v), true
		case equalFold(x.args[i], "TYPE"):
			req.Type = command.Lower(v)
		default:
			return errSyntax
		}
	}
	next, payloads, err := x.c.s.replay(req, 0) // no byte bound: next is a whole record
	var nr *feed.ErrNotRetained
	if errors.As(err, &nr) {
		return errNotRetained(nr)
	}
	if err != nil {
		return err
	}
	w := x.reply()
	w.Array(2)
	w.Int(int64(next.Seq))
	w.Array(len(payloads))
	for _, p := range payloads {
		w.Bulk(p)
	}
	return nil
}

func (s *Server) replay(req replayRequest, maxBytes int) (feed.Cursor, [][]byte, error) {
	return feed.Replay(s.store, s.opts.FeedPrefix, feed.Cursor{Seq: req.From, I: max(req.I, 0)},
		cmp.Or(req.Count, changesDefault), req.filter(), maxBytes)
}

// replayErr is the JSON reply on <prefix>.replay of a failed request.
type replayErr struct {
	Error  string `json:"error"`
	Oldest uint64 `json:"oldest,omitempty"` // with the error of a sequence not retained
}

// replayReplyHead is the bound on the bytes around the events in a reply:
// {"next":N,"next_i":N,"events":[...]}.
const replayReplyHead = 64

// appendReplayReply appends the JSON reply of a replay:
// {"next":N,"next_i":I,"events":[<payload>,...]}, each payload the JSON
// object the feed publishes, as is (not re-encoded: no escaping added).
func appendReplayReply(b []byte, next feed.Cursor, payloads [][]byte) []byte {
	b = append(b, `{"next":`...)
	b = strconv.AppendUint(b, next.Seq, 10)
	b = append(b, `,"next_i":`...)
	b = strconv.AppendInt(b, int64(next.I), 10)
	b = append(b, `,"events":[`...)
	for i, p := range payloads {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	return append(b, "]}"...)
}

// serveReplay answers requests on <prefix>.replay on the server's NATS
// connection: CHANGES for nats.go programs (a JSON request and reply,
// docs/change-feed.md). A reply stays within NATS's max_payload: the
// records that would not fit are left for the next request. It also
// serves <prefix>.snapshot (serveSnapshot), and closes the open snapshots
// at shutdown, before the store closes.
func (s *Server) serveReplay() error {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-s.ctx.Done()
		s.snaps.closeAll()
	}()
	if err := s.serveSnapshot(); err != nil {
		return err
	}
	nc := s.wake.nc
	subject := cmp.Or(s.opts.FeedPrefix, feed.DefaultPrefix) + ".replay"
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var req replayRequest
		var body []byte
		if err := json.Unmarshal(m.Data, &req); err != nil {
			body, _ = json.Marshal(replayErr{Error: "bad request: " + err.Error()})
		} else {
			next, payloads, err := s.replay(req, int(nc.MaxPayload())-replayReplyHead)
			var nr *feed.ErrNotRetained
			switch {
			case errors.As(err, &nr):
				body, _ = json.Marshal(replayErr{Error: nr.Error(), Oldest: nr.Oldest})
			case err != nil:
				body, _ = json.Marshal(replayErr{Error: err.Error()})
			default:
				body = appendReplayReply(nil, next, payloads)
			}
		}
		if err := m.Respond(body); err != nil {
			s.opts.Logger.Warn("change feed: replay reply failed", "err", err, "bytes", len(body))
		}
	})
	if err != nil {
		return fmt.Errorf("broker: change feed replay subject: %w", err)
	}
	go func() {
		<-s.ctx.Done()
		sub.Unsubscribe()
	}()
	return nil
}
