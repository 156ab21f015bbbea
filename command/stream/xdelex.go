package stream

import (
	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/groups"
	"github.com/sediment-dev/sediment/materialize"
	"github.com/sediment-dev/sediment/streams"
)

// XDELEX and XACKDEL's errors, in Redis 8.2's words (t_stream.c,
// streamParseAckDelArgsOrReply).
const (
	errNumIDs      command.WireError = "ERR Number of IDs must be a positive integer"
	errNumIDsMatch command.WireError = "ERR The `numids` parameter must match the number of arguments"
	errIDSRequired command.WireError = "ERR IDS option is required"
)

// parsePolicy reports whether a is KEEPREF, DELREF or ACKED, and which.
func parsePolicy(a []byte) (streams.RefPolicy, bool) {
	switch {
	case command.EqualFold(a, "KEEPREF"):
		return streams.KeepRef, true
	case command.EqualFold(a, "DELREF"):
		return streams.DelRef, true
	case command.EqualFold(a, "ACKED"):
		return streams.Acked, true
	}
	return 0, false
}

// parseAckDel parses XDELEX's and XACKDEL's options from args[from:]: one
// policy (KEEPREF by default) and the IDS numids id... block, in either
// order. A second policy, IDs beyond numids and any other word are syntax
// errors; a second IDS block replaces the first, as in Redis.
func parseAckDel(args [][]byte, from int) (streams.RefPolicy, [][]byte, error) {
	var (
		policy    streams.RefPolicy
		policySet bool
		ids       [][]byte
	)
	for j := from; j < len(args); j++ {
		a := args[j]
		if p, ok := parsePolicy(a); ok && !policySet {
			policy, policySet = p, true
			continue
		}
		if command.EqualFold(a, "IDS") && j+1 < len(args) {
			n, ok := command.ParseInt(args[j+1])
			if !ok || n < 1 {
				return 0, nil, errNumIDs
			}
			if n > int64(len(args)-j-2) {
				return 0, nil, errNumIDsMatch
			}
			ids = args[j+2 : j+2+int(n)]
			j += 1 + int(n)
			continue
		}
		return 0, nil, command.ErrSyntax
	}
	if ids == nil {
		return 0, nil, errIDSRequired
	}
	return policy, ids, nil
}

// writeAckDel writes one code per ID; every code is -1 when codes is nil
// (a missing key or group).
func writeAckDel(x *command.Ctx, n int, codes []groups.AckDelResult) {
	x.Reply.Array(n)
	for i := 0; i < n; i++ {
		if codes == nil {
			x.Reply.Int(int64(groups.NotFound))
			continue
		}
		x.Reply.Int(int64(codes[i]))
	}
}

// XDELEX key [KEEPREF | DELREF | ACKED] IDS numids id [id ...] (Redis 8.2)
// Reply: an array with one integer per ID: 1 deleted, -1 not in the
// stream, 2 kept by ACKED because a consumer group may still need it.
// Checks run in Redis's order: the key's type, the options, a missing key
// (all -1, IDs unchecked), the IDs.
// https://redis.io/docs/latest/commands/xdelex/
func runXDelEx(x *command.Ctx) error {
	var (
		n     int
		codes []groups.AckDelResult
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		m, ok, evs, err := streams.MetaForWrite(v, x.DB, x.Args[1])
		if err != nil {
			return nil, err
		}
		policy, idArgs, err := parseAckDel(x.Args, 2)
		if err != nil {
			return nil, err
		}
		n = len(idArgs)
		if !ok {
			return evs, nil
		}
		ids, err := parseIDs(idArgs)
		if err != nil {
			return nil, err
		}
		codes, evs, err = groups.DelEx(v, x.DB, x.Args[1], m, ids, policy)
		return evs, err
	}, func() { writeAckDel(x, n, codes) })
}

// XACKDEL key group [KEEPREF | DELREF | ACKED] IDS numids id [id ...] (Redis 8.2)
// Reply: an array with one integer per ID: -1 not pending in the group
// (left alone), 1 acknowledged and deleted (or already gone from the
// stream), 2 acknowledged but kept by ACKED. A missing key or group
// replies -1 for every ID, IDs unchecked.
// https://redis.io/docs/latest/commands/xackdel/
func runXAckDel(x *command.Ctx) error {
	var (
		n     int
		codes []groups.AckDelResult
	)
	return x.Write(func(v *materialize.View) ([]codec.Event, error) {
		key, group := x.Args[1], x.Args[2]
		m, ok, evs, err := streams.MetaForWrite(v, x.DB, key)
		if err != nil {
			return nil, err
		}
		policy, idArgs, err := parseAckDel(x.Args, 3)
		if err != nil {
			return nil, err
		}
		n = len(idArgs)
		if !ok {
			return evs, nil
		}
		if _, _, err := groups.Lookup(v, x.DB, key, group); err != nil {
			if err == groups.ErrNoGroup {
				err = nil
			}
			return nil, err
		}
		ids, err := parseIDs(idArgs)
		if err != nil {
			return nil, err
		}
		codes, evs, err = groups.AckDel(v, x.DB, key, group, m, ids, policy)
		return evs, err
	}, func() { writeAckDel(x, n, codes) })
}
