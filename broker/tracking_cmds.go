package broker

import (
	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/command/reply"
)

// clientTracking runs the CLIENT subcommands of client-side caching:
// TRACKING, CACHING, GETREDIR, TRACKINGINFO. ok is false for any other
// subcommand.
// https://redis.io/docs/latest/commands/client-tracking/
func clientTracking(x *exec, sub []byte) (ok bool, err error) {
	n := len(x.args)
	switch {
	case equalFold(sub, "TRACKING") && n >= 3:
		return true, runClientTracking(x)
	case equalFold(sub, "CACHING") && n == 3:
		return true, runClientCaching(x)
	case equalFold(sub, "GETREDIR") && n == 2:
		x.reply().Int(x.c.s.track.redirection(x.c))
		return true, nil
	case equalFold(sub, "TRACKINGINFO") && n == 2:
		x.c.s.track.info(x.c, x.reply())
		return true, nil
	case equalFold(sub, "TRACKING"), equalFold(sub, "CACHING"), equalFold(sub, "GETREDIR"), equalFold(sub, "TRACKINGINFO"):
		return true, errWrongArgsSub("client", sub)
	}
	return false, nil
}

// CLIENT TRACKING ON|OFF [REDIRECT client-id] [PREFIX prefix ...] [BCAST]
// [OPTIN] [OPTOUT] [NOLOOP]: options parsed, then checked, as Redis 7.0's
// clientCommand.
func runClientTracking(x *exec) error {
	var o trackingOptions
	for i := 3; i < len(x.args); i++ {
		more := len(x.args) - 1 - i
		a := x.args[i]
		switch {
		case equalFold(a, "REDIRECT") && more > 0:
			i++
			if o.redirect != 0 {
				return errTrackingOneRedirect
			}
			id, ok := parseInt(x.args[i])
			if !ok {
				return command.ErrNotInteger
			}
			if x.c.s.clientByID(id) == nil {
				return errTrackingNoRedirect
			}
			o.redirect = id
		case equalFold(a, "BCAST"):
			o.bcast = true
		case equalFold(a, "OPTIN"):
			o.optin = true
		case equalFold(a, "OPTOUT"):
			o.optout = true
		case equalFold(a, "NOLOOP"):
			o.noloop = true
		case equalFold(a, "PREFIX") && more > 0:
			i++
			o.prefixes = append(o.prefixes, string(x.args[i]))
		default:
			return errSyntax
		}
	}
	switch {
	case equalFold(x.args[2], "ON"):
		if err := x.c.s.track.enable(x.c, o); err != nil {
			return err
		}
	case equalFold(x.args[2], "OFF"):
		x.c.s.track.disable(x.c)
	default:
		return errSyntax
	}
	x.reply().OK()
	return nil
}

// CLIENT CACHING YES|NO: in OPTIN mode YES tracks the next command's keys,
// in OPTOUT mode NO skips them.
func runClientCaching(x *exec) error {
	trk := &x.c.trk
	if !trk.on {
		return errTrackingCachingOff
	}
	switch opt := x.args[2]; {
	case equalFold(opt, "YES"):
		if !trk.optin {
			return errTrackingCachingYes
		}
	case equalFold(opt, "NO"):
		if !trk.optout {
			return errTrackingCachingNo
		}
	default:
		return errSyntax
	}
	trk.caching = true
	x.reply().OK()
	return nil
}

// redirection is CLIENT GETREDIR's reply: -1 when c does not track, 0
// without a redirection, else the target's ID.
func (t *tracker) redirection(c *conn) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.trk.on {
		return -1
	}
	return c.trk.redirect
}

// info writes CLIENT TRACKINGINFO's reply: flags, redirect, prefixes.
func (t *tracker) info(c *conn, w reply.Writer) {
	t.mu.Lock()
	trk := c.trk
	trk.prefixes = append([]string(nil), c.trk.prefixes...)
	t.mu.Unlock()
	var flags []string
	if !trk.on {
		flags = append(flags, "off")
	} else {
		flags = append(flags, "on")
		if trk.bcast {
			flags = append(flags, "bcast")
		}
		if trk.optin {
			flags = append(flags, "optin")
			if trk.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if trk.optout {
			flags = append(flags, "optout")
			if trk.caching {
				flags = append(flags, "caching-no")
			}
		}
		if trk.noloop {
			flags = append(flags, "noloop")
		}
		if trk.broken {
			flags = append(flags, "broken_redirect")
		}
	}
	w.Map(3)
	w.BulkString("flags")
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("redirect")
	if !trk.on {
		w.Int(-1)
	} else {
		w.Int(trk.redirect)
	}
	w.BulkString("prefixes")
	w.Array(len(trk.prefixes))
	for _, p := range trk.prefixes {
		w.BulkString(p)
	}
}
