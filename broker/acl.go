package broker

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sediment-dev/sediment/internal/glob"
)

// Users and permissions: Redis 7's ACL
// (https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/),
// without selectors. docs/security.md.
//
// A user is immutable once built: ACL SETUSER applies its rules to a copy
// and stores it in the user's slot, so a connection reads its user's
// permissions with one atomic load per command, and changes apply to the
// connections already authenticated as that user, as in Redis. A user
// allowed everything (the default user, unless changed) costs no check.

// aclUser is one user's state.
type aclUser struct {
	name   string
	on     bool
	nopass bool
	// sanitize is sanitize-payload (1) or skip-sanitize-payload (2), or
	// neither (0): flags Redis shows, with no effect here (no RESTORE).
	sanitize  int8
	passwords []string // SHA-256 of each password, lower-case hex, in the order added
	// allCmds is +@all: every command, those added later included. cmds
	// is the bitmap of allowed commands and subcommands (aclCmd.id).
	allCmds bool
	cmds    []uint64
	// rules are the command rules applied since the last +@all or -@all,
	// each once, in order (Redis 7.2's command_rules): what ACL LIST and
	// GETUSER show after "+@all" or "-@all".
	rules    []string
	allKeys  bool
	keys     []keyPattern
	allChans bool
	chans    []string
	// full: every command allowed, all keys, all channels (no check).
	full bool
}

type keyPattern struct {
	pattern string
	perm    keyPerm
}

// aclSlot holds a user; connections keep their user's slot.
type aclSlot struct {
	name string
	u    atomic.Pointer[aclUser] // nil once the user is deleted
}

// aclUsers is the server's users and ACL LOG.
type aclUsers struct {
	mu    sync.Mutex // guards users (the map; slots are read without it) and log
	users map[string]*aclSlot
	def   *aclSlot // "default"
	log   []*aclLogEntry
	// logMax is acllog-max-len: ACL LOG keeps this many entries.
	logMax atomic.Int64
}

func newACLUsers(password string) *aclUsers {
	a := &aclUsers{users: map[string]*aclSlot{}}
	u := newDefaultUser(password)
	a.def = &aclSlot{name: "default"}
	a.def.u.Store(u)
	a.users["default"] = a.def
	a.logMax.Store(aclLogMax)
	return a
}

// newDefaultUser is the default user as Redis starts it: on, every
// command, key and channel, and the password (nopass when empty).
func newDefaultUser(password string) *aclUser {
	u := newACLUser("default")
	for _, r := range []string{"on", "+@all", "allkeys", "allchannels"} {
		u.apply(r)
	}
	if password == "" {
		u.apply("nopass")
	} else {
		u.apply(">" + password)
	}
	u.seal()
	return u
}

// slot returns the named user's slot, or nil.
func (a *aclUsers) slot(name string) *aclSlot {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.users[name]
}

// setDefaultPassword is CONFIG SET requirepass: the default user's
// passwords become this one (nopass when empty), as Redis 7.0 does.
func (a *aclUsers) setDefaultPassword(password string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.def.u.Load().clone()
	u.apply("resetpass")
	if password == "" {
		u.apply("nopass")
	} else {
		u.apply(">" + password)
	}
	u.seal()
	a.def.u.Store(u)
}

func (u *aclUser) clone() *aclUser {
	c := *u
	c.passwords = slices.Clone(u.passwords)
	c.cmds = slices.Clone(u.cmds)
	c.rules = slices.Clone(u.rules)
	c.keys = slices.Clone(u.keys)
	c.chans = slices.Clone(u.chans)
	return &c
}

// newACLUser is a user as ACL SETUSER creates it: off, no password, no
// keys, no channels, no commands.
func newACLUser(name string) *aclUser {
	return &aclUser{name: name, cmds: make([]uint64, (len(acls().cmds)+63)/64)}
}

// seal computes full once the rules are applied.
func (u *aclUser) seal() {
	u.full = u.allKeys && u.allChans && u.allCmds
	for _, c := range acls().cmds {
		if !u.can(c) {
			u.full = false
			break
		}
	}
}

func (u *aclUser) can(c *aclCmd) bool {
	return c.id/64 < len(u.cmds) && u.cmds[c.id/64]&(1<<(c.id%64)) != 0
}

func (u *aclUser) setCmd(c *aclCmd, allow bool) {
	if len(u.cmds) <= c.id/64 {
		u.cmds = append(u.cmds, make([]uint64, c.id/64+1-len(u.cmds))...)
	}
	if allow {
		u.cmds[c.id/64] |= 1 << (c.id % 64)
	} else {
		u.cmds[c.id/64] &^= 1 << (c.id % 64)
	}
}

// setCmdTree allows or denies c and its subcommands (Redis's
// ACLChangeSelectorPerm).
func (u *aclUser) setCmdTree(c *aclCmd, allow bool) {
	u.setCmd(c, allow)
	for _, s := range c.subs {
		u.setCmd(s, allow)
	}
}

// updateRules records a command rule: earlier rules for the same command
// or category (and, for a command, its subcommands) are dropped, and the
// rule goes last (Redis 7.2's ACLUpdateCommandRules).
func (u *aclUser) updateRules(name string, allow bool) {
	u.rules = slices.DeleteFunc(u.rules, func(r string) bool {
		r = r[1:]
		return r == name || (!strings.Contains(name, "|") && strings.HasPrefix(r, name+"|"))
	})
	op := "-"
	if allow {
		op = "+"
	}
	u.rules = append(u.rules, op+name)
}

// ACL SETUSER's reasons (Redis 7.0 acl.c ACLSetUserStringError), after
// "ERR Error in ACL SETUSER modifier '<rule>': ".
const (
	aclErrSyntax        = "Syntax error"
	aclErrUnknownCmd    = "Unknown command or category name in ACL"
	aclErrHash          = "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	aclErrNoSuchPass    = "The password you are trying to remove from the user does not exist"
	aclErrKeyAfterAll   = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	aclErrChanAfterAll  = "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	aclErrNoSelectors   = "Selectors are not supported by Sediment"
	aclErrFirstArgRules = "Allowing first-arg of a subcommand is not supported by Sediment"
)

// apply applies one ACL rule to u; the error is the reason Redis gives.
func (u *aclUser) apply(rule string) error {
	lower := strings.ToLower(rule)
	switch lower {
	case "on":
		u.on = true
	case "off":
		u.on = false
	case "nopass":
		u.nopass, u.passwords = true, nil
	case "resetpass":
		u.nopass, u.passwords = false, nil
	case "allkeys", "~*":
		u.allKeys, u.keys = true, nil
	case "resetkeys":
		u.allKeys, u.keys = false, nil
	case "allchannels", "&*":
		u.allChans, u.chans = true, nil
	case "resetchannels":
		u.allChans, u.chans = false, nil
	case "allcommands", "+@all":
		u.allCmds, u.rules = true, nil
		for _, c := range acls().cmds {
			u.setCmd(c, true)
		}
	case "nocommands", "-@all":
		u.allCmds, u.rules = false, nil
		clear(u.cmds)
	case "sanitize-payload":
		u.sanitize = 1
	case "skip-sanitize-payload":
		u.sanitize = 2
	case "reset":
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels", "sanitize-payload", "off", "-@all"} {
			u.apply(r)
		}
	case "clearselectors":
	default:
		return u.applyValued(rule)
	}
	return nil
}

// applyValued applies the rules that carry a value: passwords, patterns,
// commands and categories.
func (u *aclUser) applyValued(rule string) error {
	switch {
	case rule == "":
		return errString(aclErrSyntax)
	case rule[0] == '>' || rule[0] == '#':
		h, err := passwordHash(rule)
		if err != nil {
			return err
		}
		if !slices.Contains(u.passwords, h) {
			u.passwords = append(u.passwords, h)
		}
		u.nopass = false
	case rule[0] == '<' || rule[0] == '!':
		h, err := passwordHash(rule)
		if err != nil {
			return err
		}
		i := slices.Index(u.passwords, h)
		if i < 0 {
			return errString(aclErrNoSuchPass)
		}
		u.passwords = slices.Delete(u.passwords, i, i+1)
	case rule[0] == '~' || rule[0] == '%':
		p, err := parseKeyPattern(rule)
		if err != nil {
			return err
		}
		if u.allKeys {
			return errString(aclErrKeyAfterAll)
		}
		// A pattern given again gains the new permissions (Redis's).
		if i := slices.IndexFunc(u.keys, func(k keyPattern) bool { return k.pattern == p.pattern }); i >= 0 {
			u.keys[i].perm |= p.perm
		} else {
			u.keys = append(u.keys, p)
		}
	case rule[0] == '&':
		if u.allChans {
			return errString(aclErrChanAfterAll)
		}
		if !slices.Contains(u.chans, rule[1:]) {
			u.chans = append(u.chans, rule[1:])
		}
	case rule[0] == '(':
		return errString(aclErrNoSelectors)
	case rule[0] == '+' || rule[0] == '-':
		return u.applyCommandRule(strings.ToLower(rule[1:]), rule[0] == '+')
	default:
		return errString(aclErrSyntax)
	}
	return nil
}

func (u *aclUser) applyCommandRule(name string, allow bool) error {
	t := acls()
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		i := slices.Index(aclCategories, cat)
		if i < 0 {
			return errString(aclErrUnknownCmd)
		}
		for _, c := range t.cmds {
			if c.cats&(1<<i) != 0 {
				u.setCmdTree(c, allow)
			}
		}
		u.updateRules(name, allow)
		return nil
	}
	c, ok := t.byName[name]
	if !ok {
		if parent, _, sub := strings.Cut(name, "|"); sub {
			if p, ok := t.byName[parent]; ok && len(p.subs) == 0 && p.parent == nil {
				return errString(aclErrFirstArgRules)
			}
		}
		return errString(aclErrUnknownCmd)
	}
	u.setCmdTree(c, allow)
	u.updateRules(name, allow)
	return nil
}

// errString is an ACL SETUSER reason.
type errString string

func (e errString) Error() string { return string(e) }

// passwordHash returns the SHA-256 hex of a >password or <password rule,
// or checks the hash of a #hash or !hash rule.
func passwordHash(rule string) (string, error) {
	if rule[0] == '>' || rule[0] == '<' {
		h := sha256.Sum256([]byte(rule[1:]))
		return hex.EncodeToString(h[:]), nil
	}
	h := rule[1:]
	if len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", errString(aclErrHash)
	}
	return h, nil
}

// parseKeyPattern parses ~pattern, %R~pattern, %W~pattern, %RW~pattern.
func parseKeyPattern(rule string) (keyPattern, error) {
	if rule[0] == '~' {
		return keyPattern{pattern: rule[1:], perm: permRead | permWrite}, nil
	}
	flags, pat, ok := strings.Cut(rule[1:], "~")
	if !ok || flags == "" {
		return keyPattern{}, errString(aclErrSyntax)
	}
	var p keyPerm
	for _, f := range strings.ToUpper(flags) {
		switch f {
		case 'R':
			p |= permRead
		case 'W':
			p |= permWrite
		default:
			return keyPattern{}, errString(aclErrSyntax)
		}
	}
	return keyPattern{pattern: pat, perm: p}, nil
}

// describe is the user as ACL LIST shows it (Redis 7.0's ACLDescribeUser,
// with Redis 7.2's command rules).
func (u *aclUser) describe() string {
	var b strings.Builder
	b.WriteString("user ")
	b.WriteString(u.name)
	for _, f := range u.flags() {
		b.WriteString(" " + f)
	}
	for _, p := range u.passwords {
		b.WriteString(" #" + p)
	}
	if k := u.keysText(); k != "" {
		b.WriteString(" " + k)
	}
	if !u.allChans {
		b.WriteString(" resetchannels")
	}
	if c := u.channelsText(); c != "" {
		b.WriteString(" " + c)
	}
	b.WriteString(" " + u.commandsText())
	return b.String()
}

func (u *aclUser) flags() []string {
	f := []string{"off"}
	if u.on {
		f[0] = "on"
	}
	if u.nopass {
		f = append(f, "nopass")
	}
	switch u.sanitize {
	case 1:
		f = append(f, "sanitize-payload")
	case 2:
		f = append(f, "skip-sanitize-payload")
	}
	return f
}

func (u *aclUser) keysText() string {
	if u.allKeys {
		return "~*"
	}
	parts := make([]string, len(u.keys))
	for i, k := range u.keys {
		switch k.perm {
		case permRead:
			parts[i] = "%R~" + k.pattern
		case permWrite:
			parts[i] = "%W~" + k.pattern
		default:
			parts[i] = "~" + k.pattern
		}
	}
	return strings.Join(parts, " ")
}

func (u *aclUser) channelsText() string {
	if u.allChans {
		return "&*"
	}
	parts := make([]string, len(u.chans))
	for i, c := range u.chans {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

func (u *aclUser) commandsText() string {
	s := "-@all"
	if u.allCmds {
		s = "+@all"
	}
	if len(u.rules) > 0 {
		s += " " + strings.Join(u.rules, " ")
	}
	return s
}

// checkPassword reports whether pass is one of u's passwords (any, when
// nopass), comparing SHA-256 digests in constant time.
func (u *aclUser) checkPassword(pass []byte) bool {
	if u.nopass {
		return true
	}
	h := sha256.Sum256(pass)
	want := make([]byte, 32)
	ok := false
	for _, p := range u.passwords {
		if _, err := hex.Decode(want, []byte(p)); err == nil && subtle.ConstantTimeCompare(h[:], want) == 1 {
			ok = true
		}
	}
	return ok
}

// aclDenial is why a request is refused: the ACL LOG reason ("command",
// "key", "channel"), and the object (the command's name, the key, the
// channel).
type aclDenial struct {
	reason, object string
}

// check returns nil when u may run the request, or why not (Redis 7.0's
// ACLCheckAllUserCommandPerm): the command (AUTH and HELLO always
// run), then each key with the permission its key spec needs, then each
// channel.
func (u *aclUser) check(cmd *cmdSpec, args [][]byte) *aclDenial {
	if u.full {
		return nil
	}
	a := acls().aclFor(cmd, args)
	if !noAuthOK(cmd) && !u.can(a) {
		return &aclDenial{"command", a.name}
	}
	if !u.allKeys {
		keys, _ := getKeys(cmd, args)
		for i, k := range keys {
			if !u.keyAllowed(k, a.keyPerms(args, i)) {
				return &aclDenial{"key", string(k)}
			}
		}
	}
	if !u.allChans {
		chans, patterns := commandChannels(cmd, args)
		for _, ch := range chans {
			if !u.channelAllowed(ch, patterns) {
				return &aclDenial{"channel", string(ch)}
			}
		}
	}
	return nil
}

// keyAllowed: some pattern holding every permission needed matches key.
func (u *aclUser) keyAllowed(key []byte, need keyPerm) bool {
	for _, p := range u.keys {
		if p.perm&need == need && glob.Match([]byte(p.pattern), key) {
			return true
		}
	}
	return false
}

// channelAllowed: a channel matches one of u's patterns; a pattern
// (PSUBSCRIBE) must be one of them literally, as in Redis.
func (u *aclUser) channelAllowed(ch []byte, isPattern bool) bool {
	for _, p := range u.chans {
		if isPattern && p == string(ch) || !isPattern && glob.Match([]byte(p), ch) {
			return true
		}
	}
	return false
}

// commandChannels returns the channels a request names, and whether they
// are patterns.
func commandChannels(cmd *cmdSpec, args [][]byte) (chans [][]byte, patterns bool) {
	switch cmd.name {
	case "publish", "spublish":
		return args[1:2], false
	case "subscribe", "ssubscribe":
		return args[1:], false
	case "psubscribe":
		return args[1:], true
	}
	return nil, false
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
	return wireError(fmt.Sprintf("ERR Error in ACL SETUSER modifier '%s': %s", sanitize([]byte(rule), 128), err))
}
