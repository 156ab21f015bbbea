package broker

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sediment-dev/sediment/command/reply"
)

// ACL subcommands (https://redis.io/docs/latest/commands/acl/), Redis 7.0's
// replies and errors. Users live in memory: ACL SAVE and LOAD answer as
// Redis without an aclfile.

func init() {
	register(&cmdSpec{name: "acl", arity: -2, flags: flagNoScript | flagLoading | flagStale, group: "server", since: "6.0.0", summary: "A container for Access List Control commands.", run: runACL})
}

const errACLNoFile wireError = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

var aclHelp = []string{
	"ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CAT [<category>]",
	"    List all commands that belong to <category>, or all command categories",
	"    when no category is specified.",
	"DELUSER <username> [<username> ...]",
	"    Delete a list of users.",
	"DRYRUN <username> <command> [<arg> ...]",
	"    Returns whether the user can execute the given command without executing the command.",
	"GETUSER <username>",
	"    Get the user's details.",
	"GENPASS [<bits>]",
	"    Generate a secure 256-bit user password. The optional `bits` argument can",
	"    be used to specify a different size.",
	"LIST",
	"    Show users details in config file format.",
	"LOAD",
	"    Reload users from the ACL file.",
	"LOG [<count> | RESET]",
	"    Show the ACL log entries.",
	"SAVE",
	"    Save the current config to the ACL file.",
	"SETUSER <username> <attribute> [<attribute> ...]",
	"    Create or modify a user with the specified attributes.",
	"USERS",
	"    List all the registered usernames.",
	"WHOAMI",
	"    Return the current connection username.",
	"HELP",
	"    Prints this help.",
}

func runACL(x *exec) error {
	sub := strings.ToLower(string(x.args[1]))
	a := x.c.s.acl
	w := x.reply()
	n := len(x.args)
	switch {
	case sub == "setuser" && n >= 3:
		return aclSetUser(x)
	case sub == "getuser" && n == 3:
		s := a.slot(string(x.args[2]))
		if s == nil {
			w.NullBulk()
			return nil
		}
		writeACLUser(w, s.u.Load())
	case sub == "deluser" && n >= 3:
		return aclDelUser(x)
	case sub == "list" && n == 2:
		names := a.sortedUserNames()
		w.Array(len(names))
		for _, name := range names {
			w.BulkString(a.slot(name).u.Load().describe())
		}
	case sub == "users" && n == 2:
		names := a.sortedUserNames()
		w.Array(len(names))
		for _, name := range names {
			w.BulkString(name)
		}
	case sub == "whoami" && n == 2:
		w.BulkString(x.c.userSlot().name)
	case sub == "cat" && n <= 3:
		return aclCat(x)
	case sub == "genpass" && n <= 3:
		bits := int64(256)
		if n == 3 {
			v, ok := parseInt(x.args[2])
			if !ok {
				return errNotInteger
			}
			if v <= 0 || v > 4096 {
				return wireError("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
			}
			bits = v
		}
		w.BulkString(genPass(int(bits)))
	case sub == "log" && n <= 3:
		return aclLog(x)
	case sub == "dryrun" && n >= 4:
		return aclDryRun(x)
	case (sub == "save" || sub == "load") && n == 2:
		path := x.c.s.opts.ACLFile
		if path == "" {
			return errACLNoFile
		}
		if sub == "save" {
			if err := a.save(path); err != nil {
				return wireError("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
			}
		} else if err := a.load(path, func(gone []*aclSlot) { x.c.s.closeUsers(gone, x.c) }); err != nil {
			return wireError("ERR " + redisErrText(err.Error()))
		}
		w.OK()
	case sub == "help" && n == 2:
		w.Array(len(aclHelp))
		for _, l := range aclHelp {
			w.Simple(l)
		}
	case slices.Contains(subcommands["acl"], sub):
		return errWrongArgsSub("acl", x.args[1])
	default:
		return errUnknownSubcommand(x.args[1], "acl")
	}
	return nil
}

// ACL SETUSER username [rule ...]: the rules apply in order to a copy of
// the user (a new one: off, no passwords, keys, channels or commands),
// after a selector split across arguments is joined into one
// (mergeSelectorArgs); the first bad rule fails the whole command,
// changing nothing.
func aclSetUser(x *exec) error {
	a := x.c.s.acl
	name := string(x.args[2])
	if hasSpaces(name) {
		return wireError("ERR Usernames can't contain spaces or null characters")
	}
	rules := make([]string, len(x.args)-3)
	for i, r := range x.args[3:] {
		rules[i] = string(r)
	}
	rules, open := mergeSelectorArgs(rules)
	if open >= 0 {
		return wireError("ERR Unmatched parenthesis in acl selector starting at '" + redisErrText(string(x.args[3+open])) + "'.")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	slot := a.users[name]
	var u *aclUser
	if slot != nil {
		u = slot.u.Load().clone()
	} else {
		u = newACLUser(name)
	}
	for _, r := range rules {
		if err := u.apply(r); err != nil {
			return aclSetUserError(r, err)
		}
	}
	u.seal()
	if slot == nil {
		slot = &aclSlot{name: name}
		a.users[name] = slot
	}
	slot.u.Store(u)
	x.reply().OK()
	return nil
}

// ACL DELUSER username [username ...]: the users that existed are deleted
// and their connections closed, as in Redis.
func aclDelUser(x *exec) error {
	a := x.c.s.acl
	for _, n := range x.args[2:] {
		if string(n) == "default" {
			return wireError("ERR The 'default' user cannot be removed")
		}
	}
	var gone []*aclSlot
	a.mu.Lock()
	for _, n := range x.args[2:] {
		if s, ok := a.users[string(n)]; ok {
			delete(a.users, string(n))
			s.u.Store(nil)
			gone = append(gone, s)
		}
	}
	a.mu.Unlock()
	x.c.s.closeUsers(gone, x.c)
	x.reply().Int(int64(len(gone)))
	return nil
}

// writeACLUser is ACL GETUSER's reply (Redis 7.0's fields): flags,
// passwords, the root selector's commands, keys and channels, and
// "selectors", an array of the other selectors, each a map of those three.
func writeACLUser(w reply.Writer, u *aclUser) {
	w.Map(6)
	w.BulkString("flags")
	flags := u.flags()
	w.Set(len(flags))
	for _, f := range flags {
		w.BulkString(f)
	}
	w.BulkString("passwords")
	w.Array(len(u.passwords))
	for _, p := range u.passwords {
		w.BulkString(p)
	}
	writeACLSelector(w, &u.root)
	w.BulkString("selectors")
	w.Array(len(u.selectors))
	for _, s := range u.selectors {
		w.Map(3)
		writeACLSelector(w, s)
	}
}

// writeACLSelector is a selector's fields in ACL GETUSER (Redis 7.0's
// aclAddReplySelectorDescription).
func writeACLSelector(w reply.Writer, s *aclSelector) {
	w.BulkString("commands")
	w.BulkString(s.commandsText())
	w.BulkString("keys")
	w.BulkString(s.keysText())
	w.BulkString("channels")
	w.BulkString(s.channelsText())
}

// ACL CAT [category]: the categories, or the commands (and subcommands,
// as parent|sub) in one.
func aclCat(x *exec) error {
	w := x.reply()
	if len(x.args) == 2 {
		w.Array(len(aclCategories))
		for _, c := range aclCategories {
			w.BulkString(c)
		}
		return nil
	}
	i := -1
	for j, c := range aclCategories {
		if strings.EqualFold(c, string(x.args[2])) {
			i = j
		}
	}
	if i < 0 {
		return wireError("ERR Unknown category '" + sanitize(x.args[2], 128) + "'")
	}
	var names []string
	for _, c := range acls().cmds {
		if c.cats&(1<<i) != 0 {
			names = append(names, c.name)
		}
	}
	w.Array(len(names))
	for _, n := range names {
		w.BulkString(n)
	}
	return nil
}

// ACL LOG [count | RESET]: the newest entries first (10 by default).
func aclLog(x *exec) error {
	a := x.c.s.acl
	count := int64(10)
	if len(x.args) == 3 {
		if equalFold(x.args[2], "RESET") {
			a.mu.Lock()
			a.log = nil
			a.mu.Unlock()
			x.reply().OK()
			return nil
		}
		v, ok := parseInt(x.args[2])
		if !ok {
			return errNotInteger
		}
		count = max(v, 0)
	}
	now := x.c.s.opts.Now()
	a.mu.Lock()
	entries := a.log[:min(int(count), len(a.log))]
	w := x.reply()
	w.Array(len(entries))
	for _, e := range entries {
		w.Map(7)
		w.BulkString("count")
		w.Int(e.count)
		w.BulkString("reason")
		w.BulkString(e.reason)
		w.BulkString("context")
		w.BulkString(e.context)
		w.BulkString("object")
		w.BulkString(e.object)
		w.BulkString("username")
		w.BulkString(e.username)
		w.BulkString("age-seconds")
		w.Double(float64(now.Sub(e.created)) / float64(time.Second))
		w.BulkString("client-info")
		w.BulkString(e.clientInfo)
	}
	a.mu.Unlock()
	return nil
}

// ACL DRYRUN username command [arg ...]: OK, or why the user may not run
// it (a bulk string), without running it.
func aclDryRun(x *exec) error {
	s := x.c.s.acl.slot(string(x.args[2]))
	if s == nil {
		return wireError("ERR User '" + sanitize(x.args[2], 128) + "' not found")
	}
	cmd := lookup(x.args[3])
	if cmd == nil {
		return wireError("ERR Command '" + sanitize(x.args[3], 128) + "' not found")
	}
	args := x.args[3:]
	if !cmd.arityOK(len(args)) {
		return errWrongArgs(cmd.name)
	}
	if d := s.u.Load().check(cmd, args); d != nil {
		x.reply().BulkString(dryRunText(d))
		return nil
	}
	x.reply().OK()
	return nil
}

// userSlot is the connection's user (the default user until AUTH).
func (c *conn) userSlot() *aclSlot {
	if s := c.user.Load(); s != nil {
		return s
	}
	return c.s.acl.def
}

// aclDenied checks the request against the connection's user: "", or
// the NOPERM error, the denial logged in ACL LOG (context "toplevel", or
// "multi" inside MULTI).
func (c *conn) aclDenied(cmd *cmdSpec, args [][]byte) wireError {
	slot := c.userSlot()
	u := slot.u.Load()
	if u == nil { // deleted: its connection is being closed
		return errNoPerm(&aclDenial{"command", cmd.name})
	}
	d := u.check(cmd, args)
	if d == nil {
		return ""
	}
	context := "toplevel"
	if c.multi != nil {
		context = "multi"
	}
	c.s.acl.logDenial(d.reason, context, d.object, slot.name, c.info(), c.s.opts.Now())
	return errNoPerm(d)
}

// aclChanged is EXEC's check of a queued command against its user's rules
// as they are now (Redis 7.0's execCommand): nil, or the NOPERM error,
// logged in ACL LOG with context "multi".
func (c *conn) aclChanged(cmd *cmdSpec, args [][]byte) error {
	slot := c.userSlot()
	u := slot.u.Load()
	d := &aclDenial{"command", cmd.name}
	if u != nil {
		if d = u.check(cmd, args); d == nil {
			return nil
		}
	}
	c.s.acl.logDenial(d.reason, "multi", d.object, slot.name, c.info(), c.s.opts.Now())
	reason := "no permission to execute the command or subcommand"
	switch d.reason {
	case "key":
		reason = "no permission to touch the specified keys"
	case "channel":
		reason = "no permission to access one of the channels used as arguments"
	}
	return wireError("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
}

// closeUsers closes the connections of the users gone (deleted, or absent
// from a loaded ACL file); self (the caller's) after its reply.
func (s *Server) closeUsers(gone []*aclSlot, self *conn) {
	if len(gone) == 0 {
		return
	}
	s.closeClients(func(o *conn) bool {
		s := o.userSlot()
		for _, g := range gone {
			if s == g {
				return true
			}
		}
		return false
	}, self)
}

// closeClients closes the connections match selects, self (the caller's)
// after its reply, and returns how many (CLIENT KILL, ACL DELUSER and
// LOAD).
func (s *Server) closeClients(match func(*conn) bool, self *conn) int64 {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for o := range s.conns {
		conns = append(conns, o)
	}
	s.mu.Unlock()
	closed := int64(0)
	for _, o := range conns {
		if !match(o) {
			continue
		}
		closed++
		if o == self {
			o.closeAfter = true
			continue
		}
		o.nc.Close() // its read fails: it closes
		o.cancel()
	}
	return closed
}

// NOPERM errors (Redis 7.0 server.c processCommand and acl.c).
func errNoPerm(d *aclDenial) wireError {
	switch d.reason {
	case "key":
		return "NOPERM this user has no permissions to access one of the keys used as arguments"
	case "channel":
		return "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	return wireError("NOPERM this user has no permissions to run the '" + d.object + "' command")
}

// dryRunText is ACL DRYRUN's reply for a denial (Redis 7.0
// getAclErrorMessage).
func dryRunText(d *aclDenial) string {
	switch d.reason {
	case "key":
		return "This user has no permissions to access the '" + d.object + "' key"
	case "channel":
		return "This user has no permissions to access the '" + d.object + "' channel"
	}
	return "This user has no permissions to run the '" + d.object + "' command"
}

// aclLogEntry is one ACL LOG entry (Redis 7.0's fields).
type aclLogEntry struct {
	count                   int64
	reason, context, object string
	username, clientInfo    string
	created, updated        time.Time
}

// aclLogMax is acllog-max-len's default.
const aclLogMax = 128

// logDenial adds an ACL LOG entry, or counts it in an equal entry less than
// 60 s old (Redis's grouping), moving that one to the head.
func (a *aclUsers) logDenial(reason, context, object, username, clientInfo string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, e := range a.log {
		if e.reason == reason && e.context == context && e.object == object && e.username == username && now.Sub(e.updated) < 60*time.Second {
			e.count++
			e.updated, e.clientInfo = now, clientInfo
			copy(a.log[1:i+1], a.log[:i])
			a.log[0] = e
			return
		}
	}
	e := &aclLogEntry{count: 1, reason: reason, context: context, object: object, username: username,
		clientInfo: clientInfo, created: now, updated: now}
	a.log = append([]*aclLogEntry{e}, a.log...)
	if n := a.logMax.Load(); int64(len(a.log)) > n {
		a.log = a.log[:n]
	}
}

// genPass returns bits random bits as hex (rounded up to whole digits).
func genPass(bits int) string {
	b := make([]byte, (bits+7)/8)
	rand.Read(b)
	return hex.EncodeToString(b)[:(bits+3)/4]
}

// sortedUserNames returns the users' names in order.
func (a *aclUsers) sortedUserNames() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	names := make([]string, 0, len(a.users))
	for n := range a.users {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// aclSetUserError is ACL SETUSER's error for a rule.
func aclSetUserError(rule string, err error) wireError {
	return wireError(fmt.Sprintf("ERR Error in ACL SETUSER modifier '%s': %s", redisErrText(rule), err))
}

// redisErrText is s as Redis's addReplyErrorFormat("%s") writes it: up to a NUL
// byte, CR and LF as spaces, whatever its length.
func redisErrText(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
