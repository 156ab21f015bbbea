package broker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Point-in-time reads: every read command sees one committed state, however
// many writes commit while it reads (materialize.ReadView). Each case keeps
// an invariant with atomic writes (MULTI/EXEC, MSET) on one connection
// while readers on others check it; before reads were pinned, a ZCOUNT
// summed its two ranks from different states (-899 and 1101 members of
// 1000 were seen), a ZRANGE walked into members removed meanwhile and
// replied an internal error, and an LRANGE could read positions of one
// state and elements of another.

// pitCase is one invariant under churn.
type pitCase struct {
	name  string
	setup func(t *testing.T, c *redis.Client)
	// churn is one atomic write that keeps the invariant (i counts calls).
	churn func(ctx context.Context, c *redis.Client, i int) error
	// check is one read and its invariant; it returns a description of a
	// violation, or "".
	check func(ctx context.Context, c *redis.Client) (string, error)
}

const pitMembers = 300

func pitCases() []pitCase {
	ctx := context.Background()
	fill := func(t *testing.T, c *redis.Client, cmd string, key string) {
		t.Helper()
		pipe := c.Pipeline()
		for i := 0; i < pitMembers; i++ {
			switch cmd {
			case "zadd":
				pipe.ZAdd(ctx, key, redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)})
			case "rpush":
				pipe.RPush(ctx, key, "e"+strconv.Itoa(i))
			case "hset":
				pipe.HSet(ctx, key, "f"+strconv.Itoa(i), "v")
			case "sadd":
				pipe.SAdd(ctx, key, "s"+strconv.Itoa(i))
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	txn := func(ctx context.Context, c *redis.Client, fn func(p redis.Pipeliner)) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { fn(p); return nil })
		return err
	}
	want := func(what string, got, want int64) string {
		if got != want {
			return fmt.Sprintf("%s = %d, want %d", what, got, want)
		}
		return ""
	}
	return []pitCase{
		{
			// A queue: the lowest member is popped and a new one added above
			// the top, so the set slides through its score space (the floor
			// of popped members moves, the top grows).
			name:  "zset-queue",
			setup: func(t *testing.T, c *redis.Client) { fill(t, c, "zadd", "z") },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return txn(ctx, c, func(p redis.Pipeliner) {
					p.ZPopMin(ctx, "z")
					p.ZAdd(ctx, "z", redis.Z{Score: float64(pitMembers + i), Member: "n" + strconv.Itoa(i)})
				})
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				n, err := c.ZCount(ctx, "z", "-inf", "+inf").Result()
				if err != nil {
					return "", err
				}
				if s := want("ZCOUNT -inf +inf", n, pitMembers); s != "" {
					return s, nil
				}
				r, err := c.ZRange(ctx, "z", 0, -1).Result()
				if err != nil {
					return "", err
				}
				if s := want("len(ZRANGE 0 -1)", int64(len(r)), pitMembers); s != "" {
					return s, nil
				}
				r, err = c.ZRange(ctx, "z", 100, 109).Result()
				if err != nil {
					return "", err
				}
				if s := want("len(ZRANGE 100 109)", int64(len(r)), 10); s != "" {
					return s, nil
				}
				rk, err := c.ZRank(ctx, "z", r[5]).Result()
				if err == redis.Nil {
					return "", nil // popped since: a later state, fine
				}
				if err != nil {
					return "", err
				}
				if rk < 0 || rk >= pitMembers {
					return fmt.Sprintf("ZRANK = %d of %d members", rk, pitMembers), nil
				}
				return "", nil
			},
		},
		{
			// Re-scoring: members move between both halves of the set.
			name:  "zset-rescore",
			setup: func(t *testing.T, c *redis.Client) { fill(t, c, "zadd", "z") },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return c.ZAdd(ctx, "z",
					redis.Z{Score: float64((i * 7919) % 1000), Member: "m" + strconv.Itoa(i%pitMembers)},
					redis.Z{Score: float64((i * 104729) % 1000), Member: "m" + strconv.Itoa((i*31)%pitMembers)},
				).Err()
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				lo, err := c.ZCount(ctx, "z", "-inf", "(500").Result()
				if err != nil {
					return "", err
				}
				if lo < 0 || lo > pitMembers {
					return fmt.Sprintf("ZCOUNT -inf (500 = %d", lo), nil
				}
				ws, err := c.ZRangeWithScores(ctx, "z", 0, -1).Result()
				if err != nil {
					return "", err
				}
				if s := want("len(ZRANGE 0 -1)", int64(len(ws)), pitMembers); s != "" {
					return s, nil
				}
				for i := 1; i < len(ws); i++ {
					if ws[i].Score < ws[i-1].Score {
						return fmt.Sprintf("ZRANGE out of order at %d: %v after %v", i, ws[i], ws[i-1]), nil
					}
				}
				return "", nil
			},
		},
		{
			name:  "list-rotate",
			setup: func(t *testing.T, c *redis.Client) { fill(t, c, "rpush", "l") },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return txn(ctx, c, func(p redis.Pipeliner) {
					p.RPop(ctx, "l")
					p.LPush(ctx, "l", "x"+strconv.Itoa(i))
				})
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				r, err := c.LRange(ctx, "l", 0, -1).Result()
				if err != nil {
					return "", err
				}
				if s := want("len(LRANGE 0 -1)", int64(len(r)), pitMembers); s != "" {
					return s, nil
				}
				r, err = c.LRange(ctx, "l", -10, -1).Result()
				if err != nil {
					return "", err
				}
				return want("len(LRANGE -10 -1)", int64(len(r)), 10), nil
			},
		},
		{
			name:  "hash-swap",
			setup: func(t *testing.T, c *redis.Client) { fill(t, c, "hset", "h") },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return txn(ctx, c, func(p redis.Pipeliner) {
					p.HDel(ctx, "h", "f"+strconv.Itoa(i%pitMembers))
					p.HSet(ctx, "h", "f"+strconv.Itoa(i%pitMembers), strconv.Itoa(i))
				})
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				m, err := c.HGetAll(ctx, "h").Result()
				if err != nil {
					return "", err
				}
				return want("len(HGETALL)", int64(len(m)), pitMembers), nil
			},
		},
		{
			name:  "set-swap",
			setup: func(t *testing.T, c *redis.Client) { fill(t, c, "sadd", "s") },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return txn(ctx, c, func(p redis.Pipeliner) {
					p.SRem(ctx, "s", "s"+strconv.Itoa(i%pitMembers))
					p.SAdd(ctx, "s", "t"+strconv.Itoa(i))
					p.SRem(ctx, "s", "t"+strconv.Itoa(i))
					p.SAdd(ctx, "s", "s"+strconv.Itoa(i%pitMembers))
				})
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				m, err := c.SMembers(ctx, "s").Result()
				if err != nil {
					return "", err
				}
				return want("len(SMEMBERS)", int64(len(m)), pitMembers), nil
			},
		},
		{
			// MSET is atomic: MGET never sees one key's value of one MSET
			// beside another's.
			name:  "mset-mget",
			setup: func(t *testing.T, c *redis.Client) { c.MSet(ctx, "a", 0, "b", 0, "c", 0) },
			churn: func(ctx context.Context, c *redis.Client, i int) error {
				return c.MSet(ctx, "a", i, "b", i, "c", i).Err()
			},
			check: func(ctx context.Context, c *redis.Client) (string, error) {
				v, err := c.MGet(ctx, "a", "b", "c").Result()
				if err != nil {
					return "", err
				}
				if v[0] != v[1] || v[1] != v[2] {
					return fmt.Sprintf("MGET a b c = %v", v), nil
				}
				return "", nil
			},
		},
	}
}

func TestReadsArePointInTime(t *testing.T) {
	churns := 1000
	if testing.Short() {
		churns = 300
	}
	for _, tc := range pitCases() {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t)
			ctx := context.Background()
			w := ts.client(t)
			tc.setup(t, w)
			var (
				done  atomic.Bool
				reads atomic.Int64
				wg    sync.WaitGroup
			)
			bad := make(chan string, 1)
			for r := 0; r < 2; r++ {
				c := ts.client(t)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for !done.Load() {
						s, err := tc.check(ctx, c)
						if err != nil {
							s = "read error: " + err.Error()
						}
						if s != "" {
							select {
							case bad <- s:
							default:
							}
							return
						}
						reads.Add(1)
					}
				}()
			}
			for i := 0; i < churns && len(bad) == 0; i++ {
				if err := tc.churn(ctx, w, i); err != nil {
					t.Fatalf("churn %d: %v", i, err)
				}
			}
			done.Store(true)
			wg.Wait()
			select {
			case s := <-bad:
				t.Fatalf("a read saw no single state: %s", s)
			default:
			}
			if reads.Load() == 0 {
				t.Fatal("no read ran during the churn")
			}
			info := w.Info(ctx, "stats").Val()
			retries := "?"
			if i := strings.Index(info, "sediment_read_retries:"); i >= 0 {
				retries = strings.TrimSpace(strings.SplitN(info[i+len("sediment_read_retries:"):], "\n", 2)[0])
			}
			t.Logf("%d churns, %d reads, %s run again (state moved)", churns, reads.Load(), retries)
		})
	}
}
