package broker

import (
	"math"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

func init() {
	register(
		&command{name: "get", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1,
			group: "string", since: "1.0.0", summary: "Returns the string value of a key.", run: runGet},
		&command{name: "set", arity: -3, flags: flagWrite | flagDenyOOM, first: 1, last: 1, step: 1,
			group: "string", since: "1.0.0", summary: "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", run: runSet},
	)
}

// GET key. Reply: bulk string, or nil. WRONGTYPE for a non-string.
// https://redis.io/docs/latest/commands/get/
func runGet(x *exec) error {
	m, ok, err := x.view().Meta(x.db(), x.args[1])
	if err != nil {
		return err
	}
	if !ok {
		x.w().WriteNull()
		return nil
	}
	if m.Type != codec.TypeString {
		return errWrongType
	}
	x.w().WriteBulk(m.Value)
	return nil
}

// set is a parsed SET.
// SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
// Reply: OK; nil when NX/XX prevented the write; with GET the old value (or nil).
// https://redis.io/docs/latest/commands/set/
type set struct {
	nx, xx, get, keepTTL bool
	expireAtMs           int64 // absolute deadline, resolved at decision time
	relMs                int64 // EX/PX: relative, added to the decision time
}

func parseSet(args [][]byte) (set, error) {
	var c set
	expireKind := "" // the expire option given; repeating the same one is allowed, as in Redis
	for i := 3; i < len(args); i++ {
		a := args[i]
		switch {
		case equalFold(a, "NX") && !c.xx:
			c.nx = true
		case equalFold(a, "XX") && !c.nx:
			c.xx = true
		case equalFold(a, "GET"):
			c.get = true
		case equalFold(a, "KEEPTTL") && (expireKind == "" || expireKind == "KEEPTTL"):
			c.keepTTL, expireKind = true, "KEEPTTL"
		case (equalFold(a, "EX") || equalFold(a, "PX") || equalFold(a, "EXAT") || equalFold(a, "PXAT")) &&
			(expireKind == "" || equalFold(a, expireKind)) && i+1 < len(args):
			n, err := intArg(args[i+1])
			if err != nil {
				return c, err
			}
			unit := int64(1)
			if equalFold(a, "EX") || equalFold(a, "EXAT") {
				unit = 1000
			}
			if n <= 0 || n > math.MaxInt64/unit {
				return c, errInvalidExpireIn("set")
			}
			c.expireAtMs, c.relMs = 0, 0
			if a[len(a)-1] == 't' || a[len(a)-1] == 'T' {
				c.expireAtMs = n * unit
			} else {
				c.relMs = n * unit
			}
			expireKind = upper(string(a))
			i++
		default:
			return c, errSyntax
		}
	}
	return c, nil
}

func runSet(x *exec) error {
	c, err := parseSet(x.args)
	if err != nil {
		return err
	}
	key, val := x.args[1], x.args[2]
	var (
		old     []byte
		hadOld  bool
		skipped bool
	)
	return x.writeAsync(func(v *materialize.View) ([]codec.Event, error) {
		m, ok, events, err := v.MetaForWrite(x.db(), key)
		if err != nil {
			return nil, err
		}
		if c.get && ok {
			if m.Type != codec.TypeString {
				return nil, errWrongType
			}
			old, hadOld = m.Value, true
		}
		if (c.nx && ok) || (c.xx && !ok) {
			skipped = true
			return events, nil
		}
		nm := codec.Meta{Type: codec.TypeString, Value: val}
		switch {
		case c.keepTTL && ok:
			nm.ExpireAtMs = m.ExpireAtMs
		case c.relMs > 0:
			if c.relMs > math.MaxInt64-v.NowMs() {
				return nil, errInvalidExpireIn("set")
			}
			nm.ExpireAtMs = v.NowMs() + c.relMs
		case c.expireAtMs > 0:
			nm.ExpireAtMs = c.expireAtMs
		}
		prevExpire := m.ExpireAtMs
		if ok && m.Type != codec.TypeString {
			events = append(events, codec.DelKeyEvent(x.db(), key, m.Type, m.ExpireAtMs))
			prevExpire = 0
		}
		return append(events, codec.SetMetaEvent(x.db(), key, nm, prevExpire)), nil
	}, func() {
		switch {
		case c.get && hadOld:
			x.w().WriteBulk(old)
		case c.get, skipped:
			x.w().WriteNull()
		default:
			x.w().WriteString("OK")
		}
	})
}
