package broker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sediment-dev/sediment/internal/redistest"
)

// Differential cases: ACL selectors and first-argument rules, compared with
// redis-server 7.0 byte for byte (the harness runs them in RESP2 and
// RESP3, so GETUSER's selectors in both shapes). The users are sel*, made
// and deleted here.
func init() {
	steps := []confStep{
		cc("ACL", "DELUSER", "sel1", "sel2", "sel3", "sel4", "selfa", "selp", "selx"),
		// One argument, or split across several as Redis merges them;
		// inside, the rules split as redis-cli splits a line.
		cc("ACL", "SETUSER", "sel1", "on", "nopass", "(~key2 +set)"),
		cc("ACL", "SETUSER", "sel2", "on", "nopass", "(~key2", "+set)", "%R~r*", "+get", "(", "&ch", "+publish", ")", "()"),
		cc("ACL", "SETUSER", "sel3", "(~a", "", "+get)", "(   )", "(~a\t+get)", `("~a" '&b' +get)`, `("~a"x +get)`,
			"(%RW~b %R~c %W~d &c1 &c2 +@read -get)", "(+config|get)", "(ALLKEYS AllChannels +@ALL -@Dangerous)"),
		cc("ACL", "LIST"),
		cc("ACL", "GETUSER", "sel1"),
		cc("ACL", "GETUSER", "sel2"),
		cc("ACL", "GETUSER", "sel3"),
		// clearselectors and reset drop the selectors, not the root's rules.
		cc("ACL", "SETUSER", "sel3", "~root", "clearselectors"),
		cc("ACL", "GETUSER", "sel3"),
		cc("ACL", "SETUSER", "sel3", "(~x)", "reset"),
		cc("ACL", "LIST"),
		cc("ACL", "SETUSER", "sel3", "(~x)", "(allkeys allchannels allcommands)", "(~y +@all -get)"),
		cc("ACL", "LIST"),
	}
	// Errors: the whole command fails, the user is unchanged.
	for _, bad := range [][]string{
		{"(~a +get"}, {"on", "off", "(~a", "+get"}, {"(~a", "+get", "(~b"}, {"("}, {"(~a", ")", "x", "("}, {"(~a) x"},
		{"(~a +bogus)"}, {"(~a", "+bogus)"}, {"(on)"}, {")"}, {"(~a", "(~b", "x)"}, {"(~a", "(~b)"},
		{"(allkeys ~a)"}, {"(&* &a)"}, {"(+config|get|x)"}, {"(+select|)"}, {"(clearselectors)"}, {"(reset)"},
		{"(>pw)"}, {"(nopass)"}, {"(%X~a)"}, {"(%RR~a)"}, {"(%~a)"}, {`("" +get)`}, {`(~"a b")`}, {"(~a\r\n+bogus)"},
		{"(~" + strings.Repeat("k", 200), "+bogus)"}, {"+" + strings.Repeat("x", 200)},
		{"~a b"}, {"&a b"}, {"%R~a b"}, {"%WW~a"}, {"%RWR~c"}, {"%"}, {"%~a"},
	} {
		steps = append(steps, cc(append([]string{"ACL", "SETUSER", "sel1"}, bad...)...))
	}
	steps = append(steps,
		cc("ACL", "GETUSER", "sel1"),
		cc("ACL", "SETUSER", "sel 1"),
		cc("ACL", "SETUSER", "sel4", "%R", "%rw~a", "%w~b", "~c", "%R~c", "%Wr~d", ""),
		cc("ACL", "GETUSER", "sel4"),
	)

	// First-argument rules: +cmd|arg for a command without subcommands.
	steps = append(steps,
		cc("ACL", "SETUSER", "selfa", "on", "nopass", "~*", "+select|0", "+select|1", "+SELECT|Foo", "+select|foo"),
		cc("ACL", "GETUSER", "selfa"),
		cc("ACL", "LIST"),
	)
	for _, bad := range []string{"-select|0", "+select|0|1", "+config|", "+config|bogus", "+bogus|x", "+client|list|x",
		"+|x", "-config|get|x", "+config|get|", "+config|get|x|y", "+get||x", "(+config|get|x)", "(-select|0)"} {
		steps = append(steps, cc("ACL", "SETUSER", "selfa", bad))
	}
	for _, rules := range [][]string{{"+@all", "-select", "+select|0"}, {"+select", "+select|0"}, {"+select|0", "+select"},
		{"+select|0", "-@all"}, {"+select|0", "+@connection"}, {"+select|0", "+select|1", "+@all"}, {"+config|get"}, {"+config|get", "+config"},
		{"(+select|0 ~x)", "(+@all -select +select|1 &ch*)"}} {
		steps = append(steps, cc(append([]string{"ACL", "SETUSER", "sel4", "reset"}, rules...)...), cc("ACL", "GETUSER", "sel4"))
	}
	steps = append(steps, cc("ACL", "LIST"), cc("ACL", "SETUSER", "selfa", "+get|X"))
	for _, c := range [][]string{{"select", "0"}, {"select", "1"}, {"SELECT", "FOO"}, {"select", "foo"}, {"select", "2"},
		{"get", "x"}, {"get", "X"}, {"get", "y"}, {"set", "x", "v"}} {
		steps = append(steps, cc(append([]string{"ACL", "DRYRUN", "selfa"}, c...)...))
	}
	steps = append(steps,
		cc("SET", "x", "1"),
		cc("AUTH", "selfa", "x"),
		cc("SELECT", "1"), cc("SELECT", "2"), cc("SELECT", "0"), cc("SELECT"),
		cc("GET", "x"), cc("GET", "X"), cc("GET", "y"), cc("GET"), cc("SET", "x", "2"),
		cc("AUTH", "default", "x"),
	)

	// Permissions: allowed when the root or one selector allows the whole
	// request; else the most relevant denial (command < key < channel,
	// then the last argument).
	steps = append(steps,
		cc("ACL", "SETUSER", "selp", "on", "nopass", "~k1", "+get", "&c1", "+publish", "+multi", "+exec",
			"(~k2 +set &c2)", "(~k3 %R~k4 +mset +get)", "(%W~w* +lmove +@read)"),
	)
	perms := [][]string{{"GET", "k2"}, {"GET", "k1"}, {"SET", "k1", "v"}, {"SET", "k2", "v"}, {"DEL", "k1"},
		{"MSET", "k1", "v", "k2", "v"}, {"MSET", "k3", "v", "k1", "v"}, {"MSET", "k3", "v", "k4", "v"}, {"MSET", "k3", "v", "k3", "v"},
		{"GET", "k4"}, {"GET", "k3"}, {"PUBLISH", "c3", "m"}, {"PUBLISH", "c2", "m"}, {"PUBLISH", "c1", "m"},
		{"LMOVE", "w1", "w2", "LEFT", "RIGHT"}, {"LMOVE", "k1", "w2", "LEFT", "RIGHT"}, {"LMOVE", "w1", "k1", "LEFT", "RIGHT"},
		{"GET", "w1"}, {"EXISTS", "k1", "k2"}}
	for _, c := range perms {
		steps = append(steps, cc(append([]string{"ACL", "DRYRUN", "selp"}, c...)...))
	}
	steps = append(steps, cc("AUTH", "selp", "x"))
	for _, c := range perms {
		steps = append(steps, cc(c...))
	}
	steps = append(steps,
		cc("MULTI"), cc("GET", "k2"), cc("SET", "k2", "v"), cc("EXEC"),
		cc("MULTI"), cc("SET", "k2", "v"), cc("GET", "k1"), cc("EXEC"),
		cc("AUTH", "default", "x"),
		// EXEC checks each command again, when its turn comes: the
		// selector that allowed GET k is gone by then.
		cc("ACL", "SETUSER", "selx", "on", "nopass", "~*", "&*", "+@all", "-get", "(~k +get)"),
		cc("AUTH", "selx", "x"),
		cc("MULTI"), cc("GET", "k"), cc("ACL", "SETUSER", "selx", "clearselectors"), cc("GET", "k"), cc("EXEC"),
		cc("AUTH", "default", "x"),
		cc("ACL", "DELUSER", "sel1", "sel2", "sel3", "sel4", "selfa", "selp", "selx"),
		cc("ACL", "LIST"),
	)
	conformanceCases = append(conformanceCases, confCase{name: "acl selectors", steps: steps})
}

// TestACLSelectorsLogLikeRedis: the ACL LOG entries of requests refused by
// a user's root and selectors (reason, context, object, user, count) are
// redis-server's, connections authenticated as the user running them.
func TestACLSelectorsLogLikeRedis(t *testing.T) {
	ctx := context.Background()
	r := redis.NewClient(&redis.Options{Addr: redistest.Start(t), Protocol: 2, MaxRetries: -1})
	defer r.Close()
	ts := newTestServer(t)
	s := ts.client(t)
	type entry struct {
		count                             int64
		reason, context, object, username string
	}
	run := func(admin *redis.Client, addr string) (replies []string, log []entry) {
		for _, c := range [][]any{
			{"ACL", "LOG", "RESET"},
			{"ACL", "SETUSER", "lg", "on", ">p", "~k1", "+get", "&c1", "+publish", "+multi", "+exec", "+select|0",
				"(~k2 +set &c2)", "(~k3 %R~k4 +mset +get)"},
		} {
			if err := admin.Do(ctx, c...).Err(); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
		}
		u := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, Username: "lg", Password: "p", DisableIdentity: true, MaxRetries: -1})
		defer u.Close()
		for _, c := range [][]any{{"GET", "k2"}, {"SET", "k1", "v"}, {"SET", "k1", "v"}, {"DEL", "k1"}, {"MSET", "k1", "v", "k2", "v"},
			{"MSET", "k3", "v", "k4", "v"}, {"PUBLISH", "c3", "m"}, {"PUBLISH", "c2", "m"}, {"SELECT", "1"}, {"SELECT", "0"}, {"GET", "k4"}} {
			v, err := u.Do(ctx, c...).Result()
			replies = append(replies, fmt.Sprint(c, " ", v, " ", err))
		}
		// Inside MULTI the context is "multi".
		p := u.TxPipeline()
		p.Get(ctx, "k1")
		p.Get(ctx, "k9")
		_, err := p.Exec(ctx)
		replies = append(replies, fmt.Sprint("multi ", err))
		v, err := admin.Do(ctx, "ACL", "LOG").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range v.([]any) {
			m := map[string]any{}
			f := e.([]any)
			for i := 0; i+1 < len(f); i += 2 {
				m[f[i].(string)] = f[i+1]
			}
			log = append(log, entry{m["count"].(int64), m["reason"].(string), m["context"].(string), m["object"].(string), m["username"].(string)})
		}
		if err := admin.Do(ctx, "ACL", "DELUSER", "lg").Err(); err != nil {
			t.Fatal(err)
		}
		return replies, log
	}
	wantReplies, wantLog := run(r, r.Options().Addr)
	gotReplies, gotLog := run(s, ts.addr)
	if !slices.Equal(wantReplies, gotReplies) {
		t.Errorf("replies:\nredis:    %q\nsediment: %q", wantReplies, gotReplies)
	}
	if !slices.Equal(wantLog, gotLog) {
		t.Errorf("ACL LOG:\nredis:    %+v\nsediment: %+v", wantLog, gotLog)
	}
	if len(wantLog) < 6 {
		t.Errorf("only %d ACL LOG entries: %+v", len(wantLog), wantLog)
	}
}

// TestACLFileSelectorsLikeRedis: selectors and first-argument rules in the
// ACL file, as redis-server reads and writes them: loaded at start, shown
// by ACL LIST, written by ACL SAVE (compared line for line) and read back
// by ACL LOAD; a line's errors, selectors' included, all reported.
func TestACLFileSelectorsLikeRedis(t *testing.T) {
	const initial = "user default on nopass ~* &* +@all\n" +
		"user a on nopass (~key2 resetchannels -@all +set) %R~r* +get\n" +
		"user b on nopass resetchannels -@all +select|0 +select|FOO (~x resetchannels &c -@all +get) (~y  +@all)\n"
	rdir, sdir := t.TempDir(), t.TempDir()
	rfile, sfile := rdir+"/users.acl", sdir+"/users.acl"
	both := func(content string) {
		for _, f := range []string{rfile, sfile} {
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	both(initial)
	r := redis.NewClient(&redis.Options{Addr: redistest.Start(t, "--aclfile", rfile), Protocol: 2, MaxRetries: -1})
	defer r.Close()
	ts := newTestServer(t, func(o *Options) { o.ACLFile = sfile })
	s := ts.client(t)
	compare := aclFileCompare(t, r, s, rfile, sfile)
	compare("ACL", "LIST")
	compare("ACL", "SETUSER", "c", "on", ">pw", "(~q*", "%R~r*", "&n", "+@read", "-get)", "+select|0", "(+config|get)", "()")
	compare("ACL", "SETUSER", "a", "(%W~w +lpush)")
	compare("ACL", "SAVE")
	rs, _ := os.ReadFile(rfile)
	ss, _ := os.ReadFile(sfile)
	if string(rs) != string(ss) {
		t.Fatalf("ACL SAVE wrote:\nredis:\n%s\nsediment:\n%s", rs, ss)
	}
	if !strings.Contains(string(ss), " (~q* %R~r* resetchannels &n -@all +@read -get)") {
		t.Fatalf("ACL SAVE's file lacks c's selector:\n%s", ss)
	}
	compare("ACL", "LOAD")
	compare("ACL", "LIST")
	compare("ACL", "GETUSER", "c")
	for _, bad := range []string{
		"user b on (~y) (+bogus) +bogus2 %X~a\nuser c on (+config|get|x)\nuser d (~a +get) (~b +bogus) +set\n",
		"user a (~x +get\n",
		"user a (~x +get ~y\nuser b (~x +get\n",
		"user a on ~a ) (~x)\n",
		"user a on ~a \"(~x\" +get)\n",
		"user b +select|0 +get|X -select|0\n",
		"user a\tb on\nuser c on\nuser c off\n",
	} {
		both(bad)
		compare("ACL", "LOAD")
	}
	compare("ACL", "LIST")
	for _, good := range []string{
		"user a on ~a (~x  +get)\nuser b +select|0 +select|X\n",
		"user a on ~a (~x \t +get)   \t\nuser b +select|0  +select|X\n",
		"user a on ~a (~x\t+get)\n",
		"user a on ~a (~x\t+get)\n  \nuser default on nopass ~* &* +@all (~q +get)\n",
	} {
		both(good)
		compare("ACL", "LOAD")
		compare("ACL", "LIST")
	}
	// Redis 7.0.15 crashes on an unclosed selector after other rules in the
	// file (it reads rules it has freed): Sediment reports it.
	if err := os.WriteFile(sfile, []byte("user a on ~a (~x +get\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustErr(t, s, "ERR "+sfile+":1: Unmatched parenthesis in selector definition."+errACLFileSuffix, "ACL", "LOAD")
}

// TestACLSelectorArgs: a selector given across arguments is merged as
// Redis merges it, and its rules are split as Redis's sdssplitargs splits.
func TestACLSelectorArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		open int
	}{
		{[]string{"on", "(~a +get)", "off"}, []string{"on", "(~a +get)", "off"}, -1},
		{[]string{"(~a", "+get)", "x"}, []string{"(~a +get)", "x"}, -1},
		{[]string{"(", "~a", "", ")"}, []string{"( ~a  )"}, -1},
		{[]string{"(~a", "(~b", "x)"}, []string{"(~b x)"}, -1},
		{[]string{"(~a", "(~b)"}, []string{"(~a (~b)"}, -1},
		{[]string{"x", "(~a", "+get"}, nil, 1},
		{[]string{"(~a", ")", "(~b"}, nil, 2},
		{[]string{"()", ")"}, []string{"()", ")"}, -1},
	} {
		got, open := mergeSelectorArgs(tc.args)
		if !slices.Equal(got, tc.want) || open != tc.open {
			t.Errorf("mergeSelectorArgs(%q) = %q, %d; want %q, %d", tc.args, got, open, tc.want, tc.open)
		}
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"  ~a \t +get\r\n", []string{"~a", "+get"}},
		{`"~a b" 'c d'`, []string{"~a b", "c d"}},
		{`"\x41\n\"\q" 'it\'s'`, []string{"A\n\"q", "it's"}},
		{`x"y z"w`, nil},
		{`"open`, nil},
		{`'open`, nil},
		{`a"b c" d`, []string{"ab c", "d"}},
		{"", nil},
		{"a\x00b", []string{"a"}},
		{`""`, []string{""}},
	} {
		if got := splitArgs(tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("splitArgs(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestACLSelectorsCheck: the unit of ACLCheckAllUserCommandPerm's choice,
// without a server: a request allowed by any selector passes, the denial
// reported is the most relevant one, and a user is full when one selector
// allows everything.
func TestACLSelectorsCheck(t *testing.T) {
	u := newACLUser("u")
	for _, r := range []string{"on", "~k1", "+get", "&c1", "+publish", "(~k2 +set &c2)", "(~k3 %R~k4 +mset +get)", "+select|0"} {
		if err := u.apply(r); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
	u.seal()
	if u.full {
		t.Fatal("full")
	}
	for _, tc := range []struct {
		args []string
		want string // "" allowed, else reason:object
	}{
		{[]string{"get", "k1"}, ""},
		{[]string{"get", "k4"}, ""},
		{[]string{"set", "k2", "v"}, ""},
		{[]string{"get", "k2"}, "key:k2"},
		{[]string{"set", "k1", "v"}, "key:k1"},
		{[]string{"del", "k1"}, "command:del"},
		{[]string{"mset", "k3", "v", "k1", "v"}, "key:k1"},
		{[]string{"publish", "c3", "m"}, "channel:c3"},
		{[]string{"publish", "c2", "m"}, "channel:c2"},
		{[]string{"select", "0"}, ""},
		{[]string{"SELECT", "1"}, "command:select"},
		{[]string{"config", "get", "x"}, "command:config|get"},
	} {
		args := make([][]byte, len(tc.args))
		for i, a := range tc.args {
			args[i] = []byte(a)
		}
		got := ""
		if d := u.check(lookup(args[0]), args); d != nil {
			got = d.reason + ":" + d.object
		}
		if got != tc.want {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
	if err := u.apply("(allkeys allchannels +@all)"); err != nil {
		t.Fatal(err)
	}
	if u.seal(); !u.full {
		t.Fatal("a selector allows everything: want full")
	}
	c := u.clone()
	c.apply("clearselectors")
	if c.seal(); c.full || len(u.selectors) != 3 {
		t.Fatal("clearselectors on a clone: the clone is not full, the user keeps its selectors")
	}
}
