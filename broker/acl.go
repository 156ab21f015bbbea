package broker

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/internal/glob"
)

// Users and permissions: Redis 7's ACL
// (https://redis.io/docs/latest/operate/oss_and_stack/management/security/acl/),
// selectors included. docs/security.md.
//
// A user is immutable once built: ACL SETUSER applies its rules to a copy
// and stores it in the user's slot, so a connection reads its user's
// permissions with one atomic load per command, and changes apply to the
// connections already authenticated as that user, as in Redis. A user
// allowed everything (the default user, unless changed) costs no check; a
// user without selectors costs one selector's check.

// aclUser is one user's state: what it is (on, passwords, flags) and what
// it may do, its root selector (the rules given outside parentheses) and
// the selectors added with "(rules)". A request is allowed when one of them
// allows all of it (Redis 7.0's ACLCheckAllUserCommandPerm).
type aclUser struct {
	name   string
	on     bool
	nopass bool
	// sanitize is sanitize-payload (1) or skip-sanitize-payload (2), or
	// neither (0): flags Redis shows, with no effect here (no RESTORE).
	sanitize  int8
	passwords []string // SHA-256 of each password, lower-case hex, in the order added
	root      aclSelector
	// selectors are the "(rules)" selectors in the order added. A selector
	// never changes once added: clones of the user share them.
	selectors []*aclSelector
	// full: a selector allows every command, key and channel (no check).
	full bool
}

// aclSelector is one set of permissions (Redis 7.0's aclSelector): command
// rules, key patterns and channel patterns.
type aclSelector struct {
	// allCmds is +@all: every command, those added later included. cmds
	// is the bitmap of allowed commands and subcommands (aclCmd.id).
	allCmds bool
	cmds    []uint64
	// rules are the command rules applied since the last +@all or -@all,
	// each once, in order (Redis 7.2's command_rules): what ACL LIST and
	// GETUSER show after "+@all" or "-@all".
	rules []string
	// firstArgs holds, by aclCmd.id, the first arguments (+select|0) a
	// command without subcommands is allowed with while its bit is clear,
	// in the order added (Redis's allowed_firstargs); nil when none.
	firstArgs map[int][]string
	allKeys   bool
	keys      []keyPattern
	allChans  bool
	chans     []string
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

// clone returns a copy of u that rules may change.
func (u *aclUser) clone() *aclUser {
	c := *u
	c.passwords = slices.Clone(u.passwords)
	c.root = u.root.clone()
	c.selectors = slices.Clone(u.selectors)
	return &c
}

func (s *aclSelector) clone() aclSelector {
	c := *s
	c.cmds = slices.Clone(s.cmds)
	c.rules = slices.Clone(s.rules)
	c.keys = slices.Clone(s.keys)
	c.chans = slices.Clone(s.chans)
	if s.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, args := range s.firstArgs {
			c.firstArgs[id] = slices.Clone(args)
		}
	}
	return c
}

// newACLUser is a user as ACL SETUSER creates it: off, no password, no
// keys, no channels, no commands, no selectors.
func newACLUser(name string) *aclUser {
	return &aclUser{name: name, root: newACLSelector()}
}

// newACLSelector is a selector allowing nothing (Redis's ACLCreateSelector
// with acl-pubsub-default resetchannels).
func newACLSelector() aclSelector {
	return aclSelector{cmds: make([]uint64, (len(acls().cmds)+63)/64)}
}

// seal computes full once the rules are applied.
func (u *aclUser) seal() {
	u.full = u.root.allowsAll() || slices.ContainsFunc(u.selectors, (*aclSelector).allowsAll)
}

// allowsAll reports whether s allows every command, key and channel.
func (s *aclSelector) allowsAll() bool {
	if !s.allKeys || !s.allChans || !s.allCmds {
		return false
	}
	for _, c := range acls().cmds {
		if !s.can(c) {
			return false
		}
	}
	return true
}

func (s *aclSelector) can(c *aclCmd) bool {
	return c.id/64 < len(s.cmds) && s.cmds[c.id/64]&(1<<(c.id%64)) != 0
}

func (s *aclSelector) setCmd(c *aclCmd, allow bool) {
	if len(s.cmds) <= c.id/64 {
		s.cmds = append(s.cmds, make([]uint64, c.id/64+1-len(s.cmds))...)
	}
	if allow {
		s.cmds[c.id/64] |= 1 << (c.id % 64)
	} else {
		s.cmds[c.id/64] &^= 1 << (c.id % 64)
	}
}

// setCmdTree allows or denies c and its subcommands, and forgets c's
// allowed first arguments (Redis's ACLChangeSelectorPerm).
func (s *aclSelector) setCmdTree(c *aclCmd, allow bool) {
	s.setCmd(c, allow)
	delete(s.firstArgs, c.id)
	for _, sub := range c.subs {
		s.setCmd(sub, allow)
	}
}

// updateRules records a command rule: earlier rules for the same command
// or category (and, for a command, its subcommands) are dropped, and the
// rule goes last (Redis 7.2's ACLUpdateCommandRules).
func (s *aclSelector) updateRules(name string, allow bool) {
	s.rules = slices.DeleteFunc(s.rules, func(r string) bool {
		r = r[1:]
		return r == name || (!strings.Contains(name, "|") && strings.HasPrefix(r, name+"|"))
	})
	op := "-"
	if allow {
		op = "+"
	}
	s.rules = append(s.rules, op+name)
}

// addFirstArg allows c with first argument arg while c's bit is clear
// (Redis's ACLAddAllowedFirstArg): once, compared without case.
func (s *aclSelector) addFirstArg(c *aclCmd, arg string) {
	if slices.ContainsFunc(s.firstArgs[c.id], func(a string) bool { return asciiEqualFold(a, arg) }) {
		return
	}
	if s.firstArgs == nil {
		s.firstArgs = map[int][]string{}
	}
	s.firstArgs[c.id] = append(s.firstArgs[c.id], arg)
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
	aclErrFirstArgRules = "Allowing first-arg of a subcommand is not supported"
)

// apply applies one ACL rule to u (Redis 7.0's ACLSetUser): a user rule, a
// "(rules)" selector (a selector split across arguments must be merged
// first: mergeSelectorArgs), or a rule of the root selector. The error is
// the reason Redis gives. An empty rule does nothing, as in Redis.
func (u *aclUser) apply(rule string) error {
	switch command.Lower([]byte(rule)) {
	case "":
	case "on":
		u.on = true
	case "off":
		u.on = false
	case "nopass":
		u.nopass, u.passwords = true, nil
	case "resetpass":
		u.nopass, u.passwords = false, nil
	case "sanitize-payload":
		u.sanitize = 1
	case "skip-sanitize-payload":
		u.sanitize = 2
	case "clearselectors":
		u.selectors = nil
	case "reset":
		for _, r := range []string{"resetpass", "resetkeys", "resetchannels", "off", "sanitize-payload", "clearselectors", "-@all"} {
			u.apply(r)
		}
	default:
		switch {
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
		case rule[0] == '(' && rule[len(rule)-1] == ')':
			s, err := parseSelector(rule[1 : len(rule)-1])
			if err != nil {
				return err
			}
			u.selectors = append(u.selectors, s)
		default:
			return u.root.apply(rule)
		}
	}
	return nil
}

// parseSelector builds a selector from the rules between its parentheses,
// split as redis-cli splits a line (Redis's aclCreateSelectorFromOpSet:
// unbalanced quotes give an empty list, so a selector allowing nothing).
func parseSelector(rules string) (*aclSelector, error) {
	s := newACLSelector()
	for _, r := range splitArgs(rules) {
		if err := s.apply(r); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// apply applies one rule of a selector (Redis 7.0's ACLSetSelector):
// commands, keys and channels.
func (s *aclSelector) apply(rule string) error {
	switch command.Lower([]byte(rule)) {
	case "allkeys", "~*":
		s.allKeys, s.keys = true, nil
	case "resetkeys":
		s.allKeys, s.keys = false, nil
	case "allchannels", "&*":
		s.allChans, s.chans = true, nil
	case "resetchannels":
		s.allChans, s.chans = false, nil
	case "allcommands", "+@all":
		s.allCmds, s.rules, s.firstArgs = true, nil, nil
		for _, c := range acls().cmds {
			s.setCmd(c, true)
		}
	case "nocommands", "-@all":
		s.allCmds, s.rules, s.firstArgs = false, nil, nil
		clear(s.cmds)
	default:
		switch {
		case rule == "":
			return errString(aclErrSyntax)
		case rule[0] == '~' || rule[0] == '%':
			if s.allKeys {
				return errString(aclErrKeyAfterAll)
			}
			p, err := parseKeyPattern(rule)
			if err != nil {
				return err
			}
			// A pattern given again gains the new permissions (Redis's).
			if i := slices.IndexFunc(s.keys, func(k keyPattern) bool { return k.pattern == p.pattern }); i >= 0 {
				s.keys[i].perm |= p.perm
			} else {
				s.keys = append(s.keys, p)
			}
		case rule[0] == '&':
			if s.allChans {
				return errString(aclErrChanAfterAll)
			}
			if hasSpaces(rule[1:]) {
				return errString(aclErrSyntax)
			}
			if !slices.Contains(s.chans, rule[1:]) {
				s.chans = append(s.chans, rule[1:])
			}
		case rule[0] == '+' || rule[0] == '-':
			return s.applyCommandRule(rule[1:], rule[0] == '+')
		default:
			return errString(aclErrSyntax)
		}
	}
	return nil
}

// applyCommandRule applies +name or -name: a category (@name), a command,
// a subcommand (cmd|sub), or, allowed only, a command without subcommands
// with one first argument (+select|0: Redis 7.0's first-arg rule, its
// argument kept as given).
func (s *aclSelector) applyCommandRule(name string, allow bool) error {
	t := acls()
	if cat, ok := strings.CutPrefix(name, "@"); ok {
		cat = command.Lower([]byte(cat))
		i := slices.Index(aclCategories, cat)
		if i < 0 {
			return errString(aclErrUnknownCmd)
		}
		for _, c := range t.cmds {
			if c.cats&(1<<i) != 0 {
				s.setCmdTree(c, allow)
			}
		}
		s.updateRules("@"+cat, allow)
		return nil
	}
	if i := strings.LastIndexByte(name, '|'); allow && i >= 0 {
		// Redis looks the part before the last | up first.
		c := t.lookup(name[:i])
		switch {
		case c == nil:
			return errString(aclErrUnknownCmd)
		case c.parent != nil:
			return errString(aclErrFirstArgRules)
		case i == len(name)-1:
			return errString(aclErrSyntax)
		case len(c.subs) == 0:
			s.addFirstArg(c, name[i+1:])
			return nil
		}
	}
	c := t.lookup(name)
	if c == nil {
		return errString(aclErrUnknownCmd)
	}
	s.setCmdTree(c, allow)
	s.updateRules(c.name, allow)
	return nil
}

// lookup returns the command or subcommand a rule names, without case
// ("get", "config|get"), or nil (Redis's ACLLookupCommand: a command
// without subcommands followed by |arg is no command).
func (t *aclTable) lookup(name string) *aclCmd {
	return t.byName[command.Lower([]byte(name))]
}

// asciiEqualFold is C's strcasecmp(a, b) == 0: ASCII letters without case.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
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

// parseKeyPattern parses ~pattern and %<R|W|RW>~pattern as Redis 7.0 does:
// each of R and W once, in either order and case; a % rule without ~ is
// a pattern all the same (%R is %R~, the empty pattern); no white space.
func parseKeyPattern(rule string) (keyPattern, error) {
	p, i := permRead|permWrite, 1
	if rule[0] == '%' {
		p = 0
		for ; i < len(rule); i++ {
			switch c := rule[i] &^ 0x20; {
			case c == 'R' && p&permRead == 0:
				p |= permRead
				continue
			case c == 'W' && p&permWrite == 0:
				p |= permWrite
				continue
			case rule[i] == '~':
				i++
			default:
				return keyPattern{}, errString(aclErrSyntax)
			}
			break
		}
		if p == 0 {
			return keyPattern{}, errString(aclErrSyntax)
		}
	}
	if hasSpaces(rule[i:]) {
		return keyPattern{}, errString(aclErrSyntax)
	}
	return keyPattern{pattern: rule[i:], perm: p}, nil
}

// describe is the user as ACL LIST shows it (Redis 7.0's ACLDescribeUser,
// with Redis 7.2's command rules): flags, passwords, the root selector,
// then each selector in parentheses.
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
	b.WriteString(" " + u.root.describe())
	for _, s := range u.selectors {
		b.WriteString(" (" + s.describe() + ")")
	}
	return b.String()
}

// describe is s as ACL LIST shows a selector (Redis 7.0's
// ACLDescribeSelector): key patterns, "resetchannels" and channel patterns
// (or "&*"), command rules.
func (s *aclSelector) describe() string {
	var parts []string
	if k := s.keysText(); k != "" {
		parts = append(parts, k)
	}
	if !s.allChans {
		parts = append(parts, "resetchannels")
	}
	if c := s.channelsText(); c != "" {
		parts = append(parts, c)
	}
	return strings.Join(append(parts, s.commandsText()), " ")
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

func (s *aclSelector) keysText() string {
	if s.allKeys {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
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

func (s *aclSelector) channelsText() string {
	if s.allChans {
		return "&*"
	}
	parts := make([]string, len(s.chans))
	for i, c := range s.chans {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// commandsText is "+@all" or "-@all", the command rules, then the
// first-argument rules of the commands whose bit is clear (Redis 7.0
// shows them only then), by command, each command's in the order added.
func (s *aclSelector) commandsText() string {
	parts := []string{"-@all"}
	if s.allCmds {
		parts[0] = "+@all"
	}
	parts = append(parts, s.rules...)
	for _, c := range acls().cmds {
		if args := s.firstArgs[c.id]; len(args) > 0 && !s.can(c) {
			for _, a := range args {
				parts = append(parts, "+"+c.name+"|"+a)
			}
		}
	}
	return strings.Join(parts, " ")
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

// Why a selector refuses a request, in Redis's order of relevance
// (ACL_DENIED_CMD < ACL_DENIED_KEY < ACL_DENIED_CHANNEL).
const (
	aclAllowed = iota
	aclDeniedCmd
	aclDeniedKey
	aclDeniedChannel
)

// aclKeys is a request's keys, found once for all of a user's selectors.
type aclKeys struct {
	keys [][]byte
	done bool
}

// check returns nil when u may run the request, or why not (Redis 7.0's
// ACLCheckAllUserCommandPerm): allowed when one selector allows it
// entirely; else the most relevant denial, the highest kind (command, key,
// channel) and, for one kind, the last key or channel.
func (u *aclUser) check(cmd *cmdSpec, args [][]byte) *aclDenial {
	if u.full {
		return nil
	}
	a := acls().aclFor(cmd, args)
	var ks aclKeys
	kind, idx := u.root.check(cmd, a, args, &ks)
	if kind == aclAllowed {
		return nil
	}
	for _, s := range u.selectors {
		k, i := s.check(cmd, a, args, &ks)
		if k == aclAllowed {
			return nil
		}
		if k > kind || k == kind && i > idx {
			kind, idx = k, i
		}
	}
	switch kind {
	case aclDeniedKey:
		return &aclDenial{"key", string(ks.keys[idx])}
	case aclDeniedChannel:
		chans, _ := commandChannels(cmd, args)
		return &aclDenial{"channel", string(chans[idx])}
	}
	return &aclDenial{"command", a.name}
}

// check is one selector's check of a request whose ACL entry is a (Redis
// 7.0's ACLSelectorCheckCmd): the command (AUTH and HELLO always run; a
// clear bit may allow its first argument), then each key with the
// permission its key spec needs, then each channel. It returns
// aclAllowed, or the denial and, for a key or channel, its index among the
// request's keys (getKeys) or channels (commandChannels).
func (s *aclSelector) check(cmd *cmdSpec, a *aclCmd, args [][]byte, ks *aclKeys) (kind, idx int) {
	if !noAuthOK(cmd) && !s.can(a) && !s.firstArgAllowed(a, args) {
		return aclDeniedCmd, 0
	}
	if !s.allKeys {
		if !ks.done {
			ks.keys, _ = getKeys(cmd, args)
			ks.done = true
		}
		for i, k := range ks.keys {
			if !s.keyAllowed(k, a.keyPerms(args, i)) {
				return aclDeniedKey, i
			}
		}
	}
	if !s.allChans {
		chans, patterns := commandChannels(cmd, args)
		for i, ch := range chans {
			if !s.channelAllowed(ch, patterns) {
				return aclDeniedChannel, i
			}
		}
	}
	return aclAllowed, 0
}

// firstArgAllowed: the request's first argument is one s allows a with,
// compared without case.
func (s *aclSelector) firstArgAllowed(a *aclCmd, args [][]byte) bool {
	if s.firstArgs == nil || len(args) < 2 {
		return false
	}
	for _, fa := range s.firstArgs[a.id] {
		if asciiEqualFold(fa, string(args[1])) {
			return true
		}
	}
	return false
}

// keyAllowed: some pattern holding every permission needed matches key.
func (s *aclSelector) keyAllowed(key []byte, need keyPerm) bool {
	for _, p := range s.keys {
		if p.perm&need == need && glob.Match([]byte(p.pattern), key) {
			return true
		}
	}
	return false
}

// channelAllowed: a channel matches one of s's patterns; a pattern
// (PSUBSCRIBE) must be one of them literally, as in Redis.
func (s *aclSelector) channelAllowed(ch []byte, isPattern bool) bool {
	for _, p := range s.chans {
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
