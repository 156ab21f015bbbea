package str

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/types/rstring"
)

// options are SET's and GETEX's flags (Redis's
// parseExtendedStringArgumentsOrReply): the expire value is kept raw and
// checked after the loop, as Redis does.
type options struct {
	nx, xx, get, keepTTL, persist bool
	kind                          string // "EX", "PX", "EXAT", "PXAT" or ""
	raw                           []byte // the expire value
}

type optionsFor int

const (
	forSet optionsFor = iota
	forGetEx
)

// parseOptions parses args[from:]. Each expire option excludes the others
// (repeating the same one is allowed, the last value wins); NX/XX/GET/
// KEEPTTL belong to SET, PERSIST to GETEX. Error: ErrSyntax.
func parseOptions(args [][]byte, from int, f optionsFor) (options, error) {
	var o options
	for i := from; i < len(args); i++ {
		a := args[i]
		hasNext := i+1 < len(args)
		switch {
		case f == forSet && command.EqualFold(a, "NX") && !o.xx:
			o.nx = true
		case f == forSet && command.EqualFold(a, "XX") && !o.nx:
			o.xx = true
		case f == forSet && command.EqualFold(a, "GET"):
			o.get = true
		case f == forSet && command.EqualFold(a, "KEEPTTL") && o.kind == "" && !o.persist:
			o.keepTTL = true
		case f == forGetEx && command.EqualFold(a, "PERSIST") && o.kind == "" && !o.keepTTL:
			o.persist = true
		case hasNext && !o.keepTTL && !o.persist && expireKind(a) != "" && (o.kind == "" || o.kind == expireKind(a)):
			o.kind, o.raw = expireKind(a), args[i+1]
			i++
		default:
			return o, command.ErrSyntax
		}
	}
	return o, nil
}

func expireKind(a []byte) string {
	for _, k := range []string{"EX", "PX", "EXAT", "PXAT"} {
		if command.EqualFold(a, k) {
			return k
		}
	}
	return ""
}

// expiry checks the expire value as Redis's getExpireMillisecondsOrReply
// does (an integer; > 0; seconds within int64 once in milliseconds) and
// returns it; the decision adds the time to a relative one. cmd names the
// command in the invalid-expire error.
func (o options) expiry(cmd string) (rstring.Expiry, error) {
	if o.kind == "" {
		return rstring.Expiry{}, nil
	}
	return expiryOf(o.kind, o.raw, cmd)
}

func expiryOf(kind string, raw []byte, cmd string) (rstring.Expiry, error) {
	n, err := command.IntArg(raw)
	if err != nil {
		return rstring.Expiry{}, err
	}
	unit := int64(1)
	if kind == "EX" || kind == "EXAT" {
		unit = 1000
	}
	if n <= 0 || n > math.MaxInt64/unit {
		return rstring.Expiry{}, command.ErrInvalidExpire(cmd)
	}
	if kind == "EXAT" || kind == "PXAT" {
		return rstring.Expiry{AtMs: n * unit}, nil
	}
	return rstring.Expiry{RelMs: n * unit}, nil
}

// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT
// unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]. Reply: OK; nil
// when NX/XX prevented the write; with GET the old value (or nil).
// https://redis.io/docs/latest/commands/set/
func runSet(x *command.Ctx) error {
	o, err := parseOptions(x.Args, 3, forSet)
	if err != nil {
		return err
	}
	e, err := o.expiry("set")
	if err != nil {
		return err
	}
	a := rstring.SetArgs{NX: o.nx, XX: o.xx, Get: o.get, KeepTTL: o.keepTTL, Expire: e}
	var r rstring.SetResult
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		r, events, err = rstring.Set(v, x.DB, x.Args[1], x.Args[2], a)
		return events, wire("set", err)
	}, func() {
		switch {
		case o.get:
			bulkOrNil(x, r.Old, r.HadOld)
		case !r.Done:
			x.Reply.NullBulk()
		default:
			x.Reply.OK()
		}
	})
}

// SETNX key value. Reply: 1 when set, 0 when the key exists.
// https://redis.io/docs/latest/commands/setnx/
func runSetNX(x *command.Ctx) error {
	var r rstring.SetResult
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		r, events, err = rstring.Set(v, x.DB, x.Args[1], x.Args[2], rstring.SetArgs{NX: true})
		return events, err
	}, func() { x.Reply.IntBool(r.Done) })
}

// SETEX key seconds value, PSETEX key milliseconds value. Reply: OK.
// https://redis.io/docs/latest/commands/setex/
func runSetEx(x *command.Ctx) error {
	cmd := command.Lower(x.Args[0])
	kind := "EX"
	if cmd == "psetex" {
		kind = "PX"
	}
	e, err := expiryOf(kind, x.Args[2], cmd)
	if err != nil {
		return err
	}
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		_, events, err := rstring.Set(v, x.DB, x.Args[1], x.Args[3], rstring.SetArgs{Expire: e})
		return events, wire(cmd, err)
	}, func() { x.Reply.OK() })
}

// GETSET key value. Reply: the old value, or nil. The TTL is dropped.
// https://redis.io/docs/latest/commands/getset/
func runGetSet(x *command.Ctx) error {
	var r rstring.SetResult
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		r, events, err = rstring.Set(v, x.DB, x.Args[1], x.Args[2], rstring.SetArgs{Get: true})
		return events, err
	}, func() { bulkOrNil(x, r.Old, r.HadOld) })
}

// MSET key value [key value ...], MSETNX likewise. Reply: OK for MSET;
// 1 or 0 for MSETNX (0: a key existed, nothing was set).
// https://redis.io/docs/latest/commands/mset/
func runMSet(x *command.Ctx) error {
	cmd := command.Lower(x.Args[0])
	if len(x.Args)%2 == 0 {
		return command.ErrWrongArgs(cmd)
	}
	n := (len(x.Args) - 1) / 2
	keys, vals := make([][]byte, n), make([][]byte, n)
	for i := range n {
		keys[i], vals[i] = x.Args[1+2*i], x.Args[2+2*i]
	}
	nx := cmd == "msetnx"
	var done bool
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		var events []codec.Event
		var err error
		done, events, err = rstring.MSet(v, x.DB, keys, vals, nx)
		return events, err
	}, func() {
		if nx {
			x.Reply.IntBool(done)
		} else {
			x.Reply.OK()
		}
	})
}
