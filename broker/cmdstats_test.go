package broker

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestInfoStatsConformance runs one script on fresh redis-server and
// Sediment servers, then compares INFO commandstats (calls, rejected and
// failed calls by command and subcommand; the times differ by design) and
// INFO errorstats (error replies by code) line by line.
func TestInfoStatsConformance(t *testing.T) {
	redisAddr := confStartRedis(t)
	ts := newTestServer(t)
	script := [][]string{
		{"CONFIG", "RESETSTAT"},
		{"SET", "k", "v"},
		{"GET", "k"},
		{"GET", "k"},
		{"GET"},               // rejected: arity
		{"LPUSH", "k", "x"},   // failed: WRONGTYPE
		{"NOSUCH"},            // unknown: no command counted
		{"INCR", "k"},         // failed: not an integer
		{"CLIENT", "ID"},      // a subcommand
		{"CLIENT", "GETNAME"}, // another
		{"MULTI"},
		{"SET", "a", "1"},
		{"GET", "a"},
		{"EXEC"},
		{"MULTI"},
		{"GET"},
		{"EXEC"}, // EXECABORT
		{"XADD", "s", "1-1", "f", "v"},
		{"XGROUP", "CREATE", "s", "g", "0"},
		{"XGROUP", "CREATE", "s", "g", "0"}, // BUSYGROUP
		{"XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">"},
	}
	stats := func(addr string) (cmd, errs map[string]string) {
		c := confDial(t, addr)
		for _, args := range script {
			if _, err := c.do(args...); err != nil {
				t.Fatalf("%s %v: %v", addr, args, err)
			}
		}
		cmd, errs = map[string]string{}, map[string]string{}
		usec := regexp.MustCompile(`usec=\d+,usec_per_call=[0-9.]+,`)
		for _, sec := range []string{"commandstats", "errorstats"} {
			r, err := c.do("INFO", sec)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(r.str, "\r\n") {
				k, v, ok := strings.Cut(l, ":")
				switch {
				case !ok || strings.HasPrefix(k, "cmdstat_info") || strings.HasPrefix(k, "cmdstat_config|resetstat"):
				case strings.HasPrefix(k, "cmdstat_"):
					cmd[k] = usec.ReplaceAllString(v, "")
				case strings.HasPrefix(k, "errorstat_"):
					errs[k] = v
				}
			}
		}
		return cmd, errs
	}
	wantCmd, wantErr := stats(redisAddr)
	gotCmd, gotErr := stats(ts.addr)
	for _, m := range []struct {
		name      string
		want, got map[string]string
	}{{"commandstats", wantCmd, gotCmd}, {"errorstats", wantErr, gotErr}} {
		for k, v := range m.want {
			if m.got[k] != v {
				t.Errorf("%s %s: redis %q, sediment %q", m.name, k, v, m.got[k])
			}
		}
		for k, v := range m.got {
			if _, ok := m.want[k]; !ok {
				t.Errorf("%s %s: only sediment has it (%q)", m.name, k, v)
			}
		}
	}
}

// TestCommandStatsPerServer: two servers in one process keep their own
// command counters (INFO commandstats).
func TestCommandStatsPerServer(t *testing.T) {
	a, b := newTestServer(t), newTestServer(t)
	ctx := context.Background()
	ca, cb := a.client(t), b.client(t)
	for range 3 {
		ca.Set(ctx, "k", "v", 0)
	}
	cb.Set(ctx, "k", "v", 0)
	for _, tc := range []struct {
		c    *redis.Client
		want string
	}{{ca, "cmdstat_set:calls=3,"}, {cb, "cmdstat_set:calls=1,"}} {
		if info := tc.c.Info(ctx, "commandstats").Val(); !strings.Contains(info, tc.want) {
			t.Errorf("INFO commandstats: want %s in\n%s", tc.want, info)
		}
	}
}
