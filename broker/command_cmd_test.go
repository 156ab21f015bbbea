package broker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Differential cases for COMMAND GETKEYSANDFLAGS, COMMAND LIST FILTERBY
// and COMMAND HELP (TestConformance and TestConformanceRESP3 run them
// against redis-server). LIST is compared only on filters whose commands
// Sediment all has; TestCommandListMatchesRedis compares every filter on
// the commands both have.
func init() {
	conformanceCases = append(conformanceCases, commandCases...)
}

func ccGKF(args ...string) confStep {
	return cc(append([]string{"COMMAND", "GETKEYSANDFLAGS"}, args...)...)
}

var commandCases = []confCase{
	// Each case stops at its first mismatch: a few short cases show more.
	{name: "command getkeysandflags one key spec", steps: []confStep{
		ccGKF("SET", "k", "v"),
		ccGKF("SET", "k", "v", "GET"),
		ccGKF("set", "k", "v", "EX", "10", "get"),
		ccGKF("SET", "k", "v", "NX"),
		ccGKF("GET", "k"),
		ccGKF("GETDEL", "k"),
		ccGKF("GETEX", "k", "PERSIST"),
		ccGKF("SETRANGE", "k", "0", "v"),
		ccGKF("INCR", "k"),
		ccGKF("MSET", "a", "1", "b", "2"),
		ccGKF("MGET", "a", "b", "c"),
		ccGKF("DEL", "a", "b"),
		ccGKF("EXPIRE", "a", "10"),
		ccGKF("WATCH", "a", "b"),
		ccGKF("LCS", "a", "b"),
		ccGKF("HSET", "h", "f", "v"),
		ccGKF("XADD", "s", "*", "f", "v"),
		ccGKF("XRANGE", "s", "-", "+"),
		ccGKF("XREAD", "COUNT", "1", "STREAMS", "s1", "s2", "0", "0"),
		ccGKF("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
		ccGKF("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s1", "s2", ">", ">"),
		ccGKF("XACK", "s", "g", "1-1"),
		ccGKF("XCLAIM", "s", "g", "c", "0", "1-1"),
		ccGKF("XAUTOCLAIM", "s", "g", "c", "0", "0"),
		ccGKF("XTRIM", "s", "MAXLEN", "1"),
		ccGKF("XSETID", "s", "1-1"),
	}},
	// Two key specs: the first key takes the first spec's flags, the
	// others the last's.
	{name: "command getkeysandflags two key specs", steps: []confStep{
		ccGKF("ZUNIONSTORE", "d", "2", "a", "b"),
		ccGKF("ZINTERSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "2"),
		ccGKF("ZDIFFSTORE", "d", "1", "a"),
		ccGKF("ZRANGESTORE", "d", "s", "0", "1"),
		ccGKF("LMOVE", "a", "b", "LEFT", "RIGHT"),
		ccGKF("BLMOVE", "a", "b", "LEFT", "RIGHT", "0"),
		ccGKF("RPOPLPUSH", "a", "b"),
		ccGKF("BRPOPLPUSH", "a", "b", "0"),
		ccGKF("COPY", "a", "b"),
		ccGKF("RENAME", "a", "b"),
		ccGKF("RENAMENX", "a", "b"),
		ccGKF("SMOVE", "a", "b", "m"),
		ccGKF("SINTERSTORE", "d", "a", "b"),
		ccGKF("SUNIONSTORE", "d", "a", "b"),
		ccGKF("SDIFFSTORE", "d", "a", "b"),
	}},
	{name: "command getkeysandflags numkeys", steps: []confStep{
		ccGKF("ZUNION", "2", "a", "b", "WITHSCORES"),
		ccGKF("SINTERCARD", "2", "a", "b"),
		ccGKF("LMPOP", "2", "a", "b", "LEFT"),
		ccGKF("BLMPOP", "0", "1", "a", "LEFT"),
		ccGKF("ZMPOP", "1", "z", "MAX"),
		ccGKF("BZMPOP", "0", "2", "a", "b", "MIN"),
		ccGKF("BLPOP", "a", "b", "0"),
	}},
	// Subcommands have their own key specs and arity.
	{name: "command getkeysandflags subcommands", steps: []confStep{
		ccGKF("XGROUP", "CREATE", "s", "g", "0"),
		ccGKF("XGROUP", "CREATECONSUMER", "s", "g", "c"),
		ccGKF("XGROUP", "DESTROY", "s", "g"),
		ccGKF("XINFO", "STREAM", "s"),
		ccGKF("XINFO", "CONSUMERS", "s", "g"),
		ccGKF("OBJECT", "ENCODING", "k"),
		ccGKF("MEMORY", "USAGE", "k"),
	}},
	{name: "command getkeysandflags errors", steps: []confStep{
		ccGKF("NOSUCH", "x"),
		ccGKF("PING", "x"),
		ccGKF("CONFIG", "GET", "x"),
		ccGKF("SPUBLISH", "ch", "m"),
		ccGKF("GET", "a", "b"),
		ccGKF("MSET", "a"),
		ccGKF("ZUNION", "5", "a"),
		ccGKF("XREAD", "STREAMS"),
		ccGKF("XREAD", "STREAMS", "a"),
		ccGKF("GET"),
		ccGKF(),
		cc("COMMAND", "getkeysandflags", "get", "k"),
	}},
	{name: "command getkeysandflags subcommand errors", steps: []confStep{
		ccGKF("OBJECT", "FOO", "k"),
		ccGKF("OBJECT", "ENCODING"),
		ccGKF("OBJECT", "ENCODING", "k", "x"),
		ccGKF("OBJECT", "HELP"),
		ccGKF("XINFO", "HELP"),
		ccGKF("XINFO", "STREAM"),
		ccGKF("XGROUP", "FOO", "s"),
		ccGKF("MEMORY", "DOCTOR"),
		ccGKF("MEMORY", "USAGE"),
		ccGKF("CLIENT", "NOSUCH"),
	}},
	// GETKEYS shares the subcommand handling.
	{name: "command getkeys subcommands", steps: []confStep{
		cc("COMMAND", "GETKEYS", "OBJECT", "FOO", "k"),
		cc("COMMAND", "GETKEYS", "OBJECT", "ENCODING"),
		cc("COMMAND", "GETKEYS", "OBJECT", "HELP"),
		cc("COMMAND", "GETKEYS", "XINFO", "STREAM"),
		cc("COMMAND", "GETKEYS", "XGROUP", "CREATE", "s", "g", "0"),
		cc("COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"),
	}},
	{name: "command list filterby", steps: []confStep{
		// Filters that match only commands both servers have.
		ccSorted("COMMAND", "LIST", "FILTERBY", "PATTERN", "xgroup*"),
		ccSorted("COMMAND", "LIST", "FILTERBY", "PATTERN", "XINFO*"),
		ccSorted("COMMAND", "LIST", "FILTERBY", "PATTERN", "x[ai][dn][dfs]*"), // not xidmprecord (8.6.2)
		ccSorted("COMMAND", "LIST", "FILTERBY", "PATTERN", "command*"),
		ccSorted("command", "list", "filterby", "pattern", "h*"),
		ccSorted("COMMAND", "LIST", "FILTERBY", "ACLCAT", "hash"),
		ccSorted("COMMAND", "LIST", "FILTERBY", "ACLCAT", "Transaction"),
		cc("COMMAND", "LIST", "FILTERBY", "PATTERN", "nosuch*"),
		cc("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"),
		cc("COMMAND", "LIST", "FILTERBY", "ACLCAT", "@stream"),
		cc("COMMAND", "LIST", "FILTERBY", "MODULE", "foo"),
		cc("COMMAND", "LIST", "FILTERBY", "module", ""),
	}},
	{name: "command list syntax", steps: []confStep{
		cc("COMMAND", "LIST", "x"),
		cc("COMMAND", "LIST", "FILTERBY"),
		cc("COMMAND", "LIST", "FILTERBY", "ACLCAT"),
		cc("COMMAND", "LIST", "FILTERBY", "ACLCAT", "stream", "x"),
		cc("COMMAND", "LIST", "FILTERBY", "NAME", "x"),
		cc("COMMAND", "LIST", "FOO", "ACLCAT", "stream"),
		cc("COMMAND", "LIST", "FILTERBY", "ACLCAT", "stream", "FILTERBY", "PATTERN", "x*"),
	}},
	{name: "command help", steps: []confStep{
		cc("COMMAND", "HELP"),
		cc("command", "help"),
		cc("COMMAND", "HELP", "x"),
		cc("COMMAND", "NOSUCH"),
		cc("COMMAND", "COUNT", "x"),
	}},
}

// TestCommandListMatchesRedis: for no filter, every ACL category and some
// patterns, COMMAND LIST's names are redis-server's, restricted to the
// commands and subcommands both have (Sediment's others, such as the
// Redis 7.2+ stream commands, are left out on its side; Redis's others on
// Redis's).
func TestCommandListMatchesRedis(t *testing.T) {
	rc := confDial(t, confStartRedis(t))
	sc := confDial(t, newTestServer(t).addr)
	names := func(c *confConn, args ...string) []string {
		t.Helper()
		r, err := c.do(append([]string{"COMMAND", "LIST"}, args...)...)
		if err != nil || r.kind != confArray {
			t.Fatalf("COMMAND LIST %v: %v %v", args, r, err)
		}
		var out []string
		for _, e := range r.arr {
			out = append(out, e.str)
		}
		slices.Sort(out)
		return out
	}
	redisAll, ours := names(rc), names(sc)
	var both []string
	for _, n := range ours {
		if slices.Contains(redisAll, n) {
			both = append(both, n)
		}
	}
	if len(both) < 200 || !slices.Contains(both, "config|get") || !slices.Contains(both, "xgroup|create") {
		t.Fatalf("only %d commands and subcommands shared with redis-server: %v", len(both), both)
	}
	shared := func(list []string) []string {
		return slices.DeleteFunc(list, func(n string) bool { return !slices.Contains(both, n) })
	}
	filters := [][]string{nil}
	for _, cat := range aclCategories {
		filters = append(filters, []string{"FILTERBY", "ACLCAT", cat})
	}
	for _, p := range []string{"x*", "X*", "*|*", "c*", "?et", "*[gs]et*", "s*store", "config|*", "*|help"} {
		filters = append(filters, []string{"FILTERBY", "PATTERN", p})
	}
	for _, f := range filters {
		want, got := shared(names(rc, f...)), shared(names(sc, f...))
		if !slices.Equal(want, got) {
			t.Errorf("COMMAND LIST %s on the shared commands:\nredis:    %v\nsediment: %v", strings.Join(f, " "), want, got)
		}
	}
}

// TestCommandGetKeysAndFlagsDerived: the stream commands Redis 7.0 lacks
// take their key flags from their command flags (derivedACL), as their
// ACL key permissions do: write commands' keys are RW update.
func TestCommandGetKeysAndFlagsDerived(t *testing.T) {
	c := newTestServer(t).client(t)
	for _, args := range [][]any{
		{"XACKDEL", "s", "g", "IDS", "1", "1-1"},
		{"XDELEX", "s", "IDS", "1", "1-1"},
	} {
		got := fmt.Sprint(mustDo(t, c, append([]any{"COMMAND", "GETKEYSANDFLAGS"}, args...)...))
		if want := "[[s [RW update]]]"; got != want {
			t.Errorf("COMMAND GETKEYSANDFLAGS %v = %s, want %s", args, got, want)
		}
	}
}
