package broker

import (
	"fmt"
)

// CLIENT KILL addr, or CLIENT KILL [ID id] [TYPE normal|master|slave|
// replica|pubsub] [ADDR addr] [LADDR addr] [USER user] [SKIPME yes|no]:
// closes the matching connections (the caller's own only with SKIPME no,
// after its reply). Reply: OK for the old form ("ERR No such client" when
// none matched), the number closed for the new one. Errors as Redis 7.0's.
// https://redis.io/docs/latest/commands/client-kill/
func runClientKill(x *exec) error {
	c := x.c
	match := func(o *conn) bool { return true }
	skipMe := true
	old := len(x.args) == 3
	if old {
		addr := string(x.args[2])
		match = func(o *conn) bool { return o.nc.RemoteAddr().String() == addr }
		skipMe = false
	} else {
		if len(x.args)%2 != 0 {
			return errSyntax
		}
		var filters []func(*conn) bool
		for i := 2; i < len(x.args); i += 2 {
			opt, v := x.args[i], x.args[i+1]
			switch {
			case equalFold(opt, "ID"):
				id, ok := parseInt(v)
				if !ok || id <= 0 {
					return errClientIDPositive
				}
				filters = append(filters, func(o *conn) bool { return o.id == id })
			case equalFold(opt, "TYPE"):
				f, err := clientTypeFilter(v)
				if err != nil {
					return err
				}
				filters = append(filters, f)
			case equalFold(opt, "ADDR"):
				a := string(v)
				filters = append(filters, func(o *conn) bool { return o.nc.RemoteAddr().String() == a })
			case equalFold(opt, "LADDR"):
				a := string(v)
				filters = append(filters, func(o *conn) bool { return o.nc.LocalAddr().String() == a })
			case equalFold(opt, "USER"):
				slot := c.s.acl.slot(string(v))
				if slot == nil {
					return wireError(fmt.Sprintf("ERR No such user '%s'", v))
				}
				filters = append(filters, func(o *conn) bool { return o.userSlot() == slot })
			case equalFold(opt, "SKIPME"):
				switch {
				case equalFold(v, "YES"):
					skipMe = true
				case equalFold(v, "NO"):
					skipMe = false
				default:
					return errSyntax
				}
			default:
				return errSyntax
			}
		}
		match = func(o *conn) bool {
			for _, f := range filters {
				if !f(o) {
					return false
				}
			}
			return true
		}
	}
	killed := c.s.closeClients(func(o *conn) bool { return !(o == c && skipMe) && match(o) }, c)
	if old {
		if killed == 0 {
			return errNoSuchClient
		}
		x.reply().OK()
		return nil
	}
	x.reply().Int(killed)
	return nil
}

// clientTypeFilter matches the connections of a client type, as Redis
// 7.0's getClientType: pubsub is a connection with subscriptions (either
// protocol), normal any other (MONITOR clients included); Sediment has no
// replication links, so master, replica and slave match none. An unknown
// type gets Redis's error.
func clientTypeFilter(v []byte) (func(*conn) bool, error) {
	switch {
	case equalFold(v, "NORMAL"):
		return func(o *conn) bool { return !o.subscribed() }, nil
	case equalFold(v, "PUBSUB"):
		return func(o *conn) bool { return o.subscribed() }, nil
	case equalFold(v, "MASTER"), equalFold(v, "SLAVE"), equalFold(v, "REPLICA"):
		return func(*conn) bool { return false }, nil
	}
	return nil, wireError(fmt.Sprintf("ERR Unknown client type '%s'", v))
}
