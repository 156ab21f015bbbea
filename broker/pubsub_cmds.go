package broker

import (
	"slices"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/glob"
)

func init() {
	f := flagNoScript | flagLoading | flagStale
	register(
		&cmdSpec{name: "subscribe", arity: -2, flags: f, group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels.", run: runSubscribe(subChannel), ownGoroutine: true},
		&cmdSpec{name: "psubscribe", arity: -2, flags: f, group: "pubsub", since: "2.0.0", summary: "Listens for messages published to channels that match one or more patterns.", run: runSubscribe(subPattern), ownGoroutine: true},
		&cmdSpec{name: "ssubscribe", arity: -2, flags: f, group: "pubsub", since: "7.0.0", summary: "Listens for messages published to shard channels.", run: runSubscribe(subShard), ownGoroutine: true},
		&cmdSpec{name: "unsubscribe", arity: -1, flags: f, group: "pubsub", since: "2.0.0", summary: "Stops listening to messages posted to channels.", run: runUnsubscribe(subChannel)},
		&cmdSpec{name: "punsubscribe", arity: -1, flags: f, group: "pubsub", since: "2.0.0", summary: "Stops listening to messages published to channels that match one or more patterns.", run: runUnsubscribe(subPattern)},
		&cmdSpec{name: "sunsubscribe", arity: -1, flags: f, group: "pubsub", since: "7.0.0", summary: "Stops listening to messages posted to shard channels.", run: runUnsubscribe(subShard)},
		&cmdSpec{name: "publish", arity: 3, flags: flagLoading | flagStale | flagFast, group: "pubsub", since: "2.0.0", summary: "Posts a message to a channel.", run: runPublish(kindChannel)},
		&cmdSpec{name: "spublish", arity: 3, flags: flagLoading | flagStale | flagFast, group: "pubsub", since: "7.0.0", summary: "Post a message to a shard channel", run: runPublish(kindShard)},
		&cmdSpec{name: "pubsub", arity: -2, flags: flagLoading | flagStale, group: "pubsub", since: "2.8.0", summary: "A container for Pub/Sub commands.", run: runPubSub},
	)
}

// subVerbs are the confirmation kinds of each space: subscribe, then
// unsubscribe.
var subVerbs = [...][2]string{
	subChannel: {"subscribe", "unsubscribe"},
	subPattern: {"psubscribe", "punsubscribe"},
	subShard:   {"ssubscribe", "sunsubscribe"},
}

// SUBSCRIBE channel [channel ...], PSUBSCRIBE pattern [pattern ...],
// SSUBSCRIBE shardchannel [shardchannel ...]: one confirmation per name, a
// push in RESP3 (an array in RESP2): [kind, name, count], count being the
// client's channels plus patterns (its shard channels for SSUBSCRIBE). In
// RESP2 the connection then accepts only the commands of subscribedOK.
// https://redis.io/docs/latest/commands/subscribe/
func runSubscribe(k subKind) func(x *exec) error {
	return func(x *exec) error {
		ps := x.c.s.pubsub
		if err := ps.ensureSub(); err != nil {
			return errPubSubUnavailable(err)
		}
		for _, name := range x.args[1:] {
			ps.subscribe(x.c, k, string(name))
			confirm(x, k, 0, name)
		}
		return nil
	}
}

// UNSUBSCRIBE [channel ...], PUNSUBSCRIBE [pattern ...], SUNSUBSCRIBE
// [shardchannel ...]: one confirmation per name, or per subscription when
// none is named (in byte order; Redis's order is its dict's); with none at
// all, one confirmation with a null name and count 0, as Redis.
// https://redis.io/docs/latest/commands/unsubscribe/
func runUnsubscribe(k subKind) func(x *exec) error {
	return func(x *exec) error {
		ps := x.c.s.pubsub
		names := x.args[1:]
		if len(names) == 0 {
			for _, n := range ps.names(x.c, k) {
				names = append(names, []byte(n))
			}
			if len(names) == 0 {
				confirm(x, k, 1, nil)
				return nil
			}
		}
		for _, name := range names {
			ps.unsubscribe(x.c, k, string(name))
			confirm(x, k, 1, name)
		}
		return nil
	}
}

// confirm writes one (un)subscribe confirmation: verb 0 subscribe, 1
// unsubscribe; a nil name is the null bulk string.
func confirm(x *exec, k subKind, verb int, name []byte) {
	if verb == 1 && x.tx == nil && x.c.ps.Load() != nil {
		// Messages queued before the unsubscription go before its
		// confirmation; none for it can come after.
		x.c.takePushes(false)
	}
	chanPat, shard := x.c.s.pubsub.counts(x.c)
	n := chanPat
	if k == subShard {
		n = shard
	}
	w := x.reply()
	w.Push(3)
	w.BulkString(subVerbs[k][verb])
	if name == nil {
		w.NullBulk()
	} else {
		w.Bulk(name)
	}
	w.Int(int64(n))
}

// PUBLISH channel message, SPUBLISH shardchannel message: the number of
// clients of this process that receive the message (docs/pubsub.md: the
// clients of other processes receive it too, uncounted).
// https://redis.io/docs/latest/commands/publish/
func runPublish(kind byte) func(x *exec) error {
	return func(x *exec) error {
		n, err := x.c.s.pubsub.publish(kind, x.args[1], x.args[2])
		if err != nil {
			return err
		}
		x.reply().Int(n)
		return nil
	}
}

// PUBSUB CHANNELS [pattern] | NUMSUB [channel ...] | NUMPAT |
// SHARDCHANNELS [pattern] | SHARDNUMSUB [shardchannel ...] | HELP, over
// this process's subscriptions.
// https://redis.io/docs/latest/commands/pubsub/
func runPubSub(x *exec) error {
	ps := x.c.s.pubsub
	sub, n := x.args[1], len(x.args)
	w := x.reply()
	switch {
	case (equalFold(sub, "CHANNELS") || equalFold(sub, "SHARDCHANNELS")) && n <= 3:
		k := subChannel
		if equalFold(sub, "SHARDCHANNELS") {
			k = subShard
		}
		var pat []byte
		if n == 3 {
			pat = x.args[2]
		}
		names := ps.active(k, pat)
		w.Array(len(names))
		for _, name := range names {
			w.BulkString(name)
		}
	case equalFold(sub, "NUMSUB") || equalFold(sub, "SHARDNUMSUB"):
		k := subChannel
		if equalFold(sub, "SHARDNUMSUB") {
			k = subShard
		}
		w.Array(2 * (n - 2))
		for _, ch := range x.args[2:] {
			w.Bulk(ch)
			w.Int(ps.numSub(k, string(ch)))
		}
	case equalFold(sub, "NUMPAT") && n == 2:
		w.Int(ps.numPat())
	case equalFold(sub, "HELP") && n == 2:
		command.WriteHelp(w, pubsubHelp)
	case equalFold(sub, "CHANNELS"), equalFold(sub, "SHARDCHANNELS"):
		return command.ErrSubcommandSyntax(sub, "pubsub")
	case equalFold(sub, "NUMPAT"), equalFold(sub, "HELP"):
		return errWrongArgsSub("pubsub", sub)
	default:
		return errUnknownSubcommand(sub, "pubsub")
	}
	return nil
}

// pubsubHelp is PUBSUB HELP's text, Redis 7.0's.
var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Prints this help.",
}

// active returns the names in space k with subscribers here, matching pat
// when it is not nil, sorted.
func (ps *pubsub) active(k subKind, pat []byte) []string {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	var out []string
	for name := range ps.tableLocked(k) {
		if pat == nil || glob.Match(pat, []byte(name)) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// numSub is the number of this process's clients subscribed to name.
func (ps *pubsub) numSub(k subKind, name string) int64 {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return int64(len(ps.tableLocked(k)[name]))
}

// sizes returns the numbers of channels, patterns and shard channels with
// subscribers here (INFO's pubsub_channels, pubsub_patterns,
// pubsub_shardchannels).
func (ps *pubsub) sizes() (channels, patterns, shards int) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return len(ps.channels), len(ps.patterns), len(ps.shards)
}

// numPat is the number of distinct patterns subscribed here.
func (ps *pubsub) numPat() int64 {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return int64(len(ps.patterns))
}

// subscribed reports whether c is in Redis's subscribed state: at least
// one channel, pattern or shard channel.
func (c *conn) subscribed() bool {
	if c.ps.Load() == nil {
		return false
	}
	a, b := c.s.pubsub.counts(c)
	return a+b > 0
}

// subscribedOK reports whether cmd may run on a RESP2 connection in the
// subscribed state (Redis 7.0's processCommand).
func subscribedOK(cmd *cmdSpec) bool {
	switch cmd.name {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe",
		"ping", "quit", "reset":
		return true
	}
	return false
}

// errSubscribedContext is Redis's reply to a command other than those of
// subscribedOK on a subscribed RESP2 connection.
func errSubscribedContext(cmd *cmdSpec, args [][]byte) wireError {
	return wireError("ERR Can't execute '" + fullName(cmd, args) + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
}
