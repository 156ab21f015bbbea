package stream

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XADD's IDMP errors, in Redis 8.6's words.
const (
	errIDMPExplicitID command.WireError = "ERR IDMP/IDMPAUTO can be used only with auto-generated IDs"
	errIDMPTwice      command.WireError = "ERR IDMP/IDMPAUTO specified multiple times"
	errIDMPNoPID      command.WireError = "ERR IDMP requires a non-empty producer ID"
	errIDMPNoIID      command.WireError = "ERR IDMP requires a non-empty idempotent ID"
	errIDMPAutoNoPID  command.WireError = "ERR IDMPAUTO requires a non-empty producer ID"
)

// XADD's delayed-delivery errors (a Sediment extension; the texts follow
// IDMP's and CLAIM's).
const (
	errDelayExplicitID command.WireError = "ERR DELAY/DELIVERAT can be used only with auto-generated IDs"
	errDelayTwice      command.WireError = "ERR DELAY/DELIVERAT specified multiple times"
	errDelayValue      command.WireError = "ERR DELAY must be a non-negative integer"
	errDeliverAtValue  command.WireError = "ERR DELIVERAT must be a non-negative integer"
)

// xadd is a parsed XADD.
// XADD key [NOMKSTREAM] [KEEPREF|DELREF|ACKED] [IDMPAUTO pid | IDMP pid iid] [DELAY ms | DELIVERAT unix-ms] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
// Reply: the new entry's ID (bulk string), or nil with NOMKSTREAM and no stream.
// DELAY and DELIVERAT are Sediment's (delayed delivery, docs/streams.md):
// with an auto ID only, as IDMP.
// https://redis.io/docs/latest/commands/xadd/
type xadd struct {
	key  []byte
	args streams.AddArgs
	fv   [][]byte
}

// parseTrimOptions parses the options XADD and XTRIM share, starting at
// args[i], and returns the index of the first argument it did not consume.
// For XADD (isAdd) it also accepts NOMKSTREAM and stops at the ID. This
// mirrors Redis's streamParseAddOrTrimArgsOrReply, including its checks'
// order. A reference policy (Redis 8.2) may come once among the options: a
// second one is XTRIM's syntax error and XADD's ID (an invalid one); XADD
// takes a policy without MAXLEN or MINID and does nothing with it.
//
// nodeSize is stream-node-max-entries (streams.Config.NodeSize): the trim's
// node size, and 100 times it the LIMIT of a '~' trim without one.
func parseTrimOptions(args [][]byte, i int, isAdd bool, add *streams.AddArgs, nodeSize uint64) (*streams.Trim, int, error) {
	var (
		t         streams.Trim
		limitSet  bool
		policySet bool // KEEPREF | DELREF | ACKED (Redis 8.2), at most once
	)
	for ; i < len(args); i++ {
		a := args[i]
		more := len(args) - 1 - i
		switch {
		case isAdd && len(a) == 1 && a[0] == '*':
			goto done
		case isAdd && command.EqualFold(a, "NOMKSTREAM"):
			add.NoMkStream = true
		case !policySet && isPolicy(a):
			t.Policy, _ = parsePolicy(a)
			policySet = true
		case isAdd && command.EqualFold(a, "IDMP") && more >= 2:
			if add.IDMP != nil {
				return nil, 0, errIDMPTwice
			}
			pid, iid := args[i+1], args[i+2]
			switch {
			case len(pid) == 0:
				return nil, 0, errIDMPNoPID
			case len(iid) == 0:
				return nil, 0, errIDMPNoIID
			}
			add.IDMP = &streams.IDMP{PID: pid, IID: iid}
			i += 2
		case isAdd && command.EqualFold(a, "IDMPAUTO") && more >= 1:
			if add.IDMP != nil {
				return nil, 0, errIDMPTwice
			}
			if len(args[i+1]) == 0 {
				return nil, 0, errIDMPAutoNoPID
			}
			add.IDMP = &streams.IDMP{PID: args[i+1], Auto: true}
			i++
		case isAdd && (command.EqualFold(a, "DELAY") || command.EqualFold(a, "DELIVERAT")) && more >= 1:
			if add.Delay != nil {
				return nil, 0, errDelayTwice
			}
			at := command.EqualFold(a, "DELIVERAT")
			n, ok := command.ParseInt(args[i+1])
			if !ok || n < 0 {
				if at {
					return nil, 0, errDeliverAtValue
				}
				return nil, 0, errDelayValue
			}
			add.Delay = &streams.Delay{Ms: n, At: at}
			i++
		case (command.EqualFold(a, "MAXLEN") || command.EqualFold(a, "MINID")) && more >= 1:
			strategy := streams.TrimMaxLen
			if command.EqualFold(a, "MINID") {
				strategy = streams.TrimMinID
			}
			if t.Strategy != 0 {
				return nil, 0, command.ErrMaxLenAndMinID
			}
			t.Strategy = strategy
			next := args[i+1]
			if more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				t.Approx = next[0] == '~'
				i++
			}
			i++
			if strategy == streams.TrimMaxLen {
				n, err := command.IntArg(args[i])
				if err != nil {
					return nil, 0, err
				}
				if n < 0 {
					return nil, 0, command.ErrMaxLenNeg
				}
				t.MaxLen = uint64(n)
			} else {
				id, err := ParseID(args[i], 0)
				if err != nil {
					return nil, 0, err
				}
				t.MinID = id
			}
		case command.EqualFold(a, "LIMIT") && more >= 1:
			n, err := command.IntArg(args[i+1])
			if err != nil {
				return nil, 0, err
			}
			if n < 0 {
				return nil, 0, command.ErrLimitNeg
			}
			t.Limit, limitSet = n, true
			i++
		default:
			if isAdd {
				goto done
			}
			return nil, 0, command.ErrSyntax
		}
	}
done:
	if limitSet && t.Strategy == 0 {
		return nil, 0, command.ErrLimitNoStrategy
	}
	if limitSet && !t.Approx {
		return nil, 0, command.ErrLimitNoApprox
	}
	if t.Strategy == 0 {
		return nil, i, nil
	}
	t.NodeSize = nodeSize
	if t.Approx && !limitSet {
		t.Limit = streams.ApproxLimit(nodeSize)
	}
	return &t, i, nil
}

func parseXAdd(args [][]byte, cfg streams.Config) (xadd, error) {
	c := xadd{key: args[1]}
	trim, i, err := parseTrimOptions(args, 2, true, &c.args, cfg.NodeSize())
	if err != nil {
		return c, err
	}
	c.args.Trim = trim
	if i >= len(args) {
		return c, command.ErrWrongArgs("xadd")
	}
	// The ID is checked before the field count, as Redis 7.0 does
	// (XADD s MAXLEN 1 f is an invalid ID, not a wrong number of arguments).
	idArg := args[i]
	if len(idArg) == 1 && idArg[0] == '*' {
		c.args.ID.Auto = true
	} else {
		id, _, seqStar, err := codec.ParseID(idArg, 0, true)
		if err != nil {
			return c, command.ErrInvalidStreamID
		}
		if c.args.IDMP != nil {
			return c, errIDMPExplicitID
		}
		if c.args.Delay != nil {
			return c, errDelayExplicitID
		}
		// Redis counts a bare "ms" as giving its sequence (0): "0" is 0-0,
		// refused before the key is read; only "0-*" picks one.
		if !seqStar && id.IsZero() {
			return c, command.ErrXAddIDZero
		}
		c.args.ID = streams.IDSpec{SeqAuto: seqStar, ID: id}
	}
	if n := len(args) - i - 1; n < 2 || n%2 != 0 {
		return c, command.ErrWrongArgs("xadd")
	}
	c.fv = args[i+1:]
	return c, nil
}

func runXAdd(x *command.Ctx) error {
	cfg := x.StreamConfig()
	c, err := parseXAdd(x.Args, cfg)
	if err != nil {
		return err
	}
	var (
		id    codec.ID
		added bool
	)
	c.args.Config = cfg
	// Captured one by one: each is small enough for the closure to hold a
	// copy, where c as a whole would be moved to the heap.
	key, fv, args := c.key, c.fv, c.args
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		a := args
		var refs *groups.Refs
		if a.Trim != nil {
			t := *a.Trim
			refs, t.Refs = withRefs(v, x.DB, key, &t)
			a.Trim = &t
		}
		var (
			evs []codec.Event
			err error
		)
		id, added, evs, err = streams.Add(v, x.DB, key, fv, a)
		if err != nil {
			return nil, wire(err)
		}
		return appendRefEvents(evs, refs)
	}, func() {
		if !added {
			x.Reply.NullBulk()
			return
		}
		WriteID(x.Reply, id)
	})
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count] [KEEPREF|DELREF|ACKED]
// Reply: integer, the number of entries deleted.
// https://redis.io/docs/latest/commands/xtrim/
func runXTrim(x *command.Ctx) error {
	t, _, err := parseTrimOptions(x.Args, 2, false, nil, x.StreamConfig().NodeSize())
	if err != nil {
		return err
	}
	if t == nil {
		return command.ErrSyntax
	}
	var n uint64
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		tt := *t
		var refs *groups.Refs
		refs, tt.Refs = withRefs(v, x.DB, x.Args[1], &tt)
		var (
			evs []codec.Event
			err error
		)
		n, evs, err = streams.TrimStream(v, x.DB, x.Args[1], tt)
		if err != nil {
			return nil, wire(err)
		}
		return appendRefEvents(evs, refs)
	}, func() { x.Reply.Int(int64(n)) })
}

// isPolicy reports whether a is KEEPREF, DELREF or ACKED.
func isPolicy(a []byte) bool {
	_, ok := parsePolicy(a)
	return ok
}

// withRefs returns the consumer-group view a trim under t's policy needs
// (nil for KEEPREF, which asks nothing), as both its concrete and its
// streams.Refs form.
func withRefs(v *materialize.View, db uint8, key []byte, t *streams.Trim) (*groups.Refs, streams.Refs) {
	if t.Policy == streams.KeepRef {
		return nil, nil
	}
	r := groups.NewRefs(v, db, key)
	return r, r
}

// appendRefEvents appends the PEL changes a DELREF trim made.
func appendRefEvents(evs []codec.Event, refs *groups.Refs) ([]codec.Event, error) {
	if refs == nil {
		return evs, nil
	}
	more, err := refs.Finish()
	return append(evs, more...), err
}
