package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sediment-dev/sediment/codec"
	"github.com/sediment-dev/sediment/materialize"
)

// Exit statuses of `sediment check`.
const (
	checkClean      = 0 // no violation
	checkViolations = 1 // violations found
	checkFailed     = 2 // the check could not run
)

// runCheck is `sediment check [--dir ./data] [--max-errors 100] [--rebuild]`: it
// checks a stopped server's data directory against a recount of its keys
// (materialize.Check), prints a summary and the violations, and returns
// the exit status: 0 when the store is consistent, 1 when it found
// violations, 2 when it could not check (a bad flag, no store in the
// directory, a directory a running server holds, a read error). --dir
// falls back to SEDIMENT_DIR, as the server's does. With --rebuild it
// also checks that the store equals its newest snapshot plus the change
// log after it (checkRebuild): a difference counts as a violation.
func runCheck(args []string, getenv func(string) string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("sediment check", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dir := fs.String("dir", "./data", "the data directory of a stopped server")
	maxErrors := fs.Int("max-errors", materialize.DefaultMaxViolations, "how many violations to print (all are counted)")
	rebuild := fs.Bool("rebuild", false, "also rebuild the store from its newest snapshot (<dir>/snapshots) and the change log after it, in a temporary directory, and compare the two key for key")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return checkClean
		}
		return checkFailed
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(errOut, "sediment check: unexpected argument %q\n", fs.Arg(0))
		return checkFailed
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "dir" })
	if v := getenv("SEDIMENT_DIR"); v != "" && !set {
		*dir = v
	}
	if *maxErrors <= 0 {
		fmt.Fprintf(errOut, "sediment check: --max-errors must be at least 1, got %d\n", *maxErrors)
		return checkFailed
	}
	start := time.Now()
	rep, err := materialize.Check(materialize.Options{Dir: *dir}, *maxErrors)
	if err != nil {
		fmt.Fprintf(errOut, "sediment check: %v\n", err)
		return checkFailed
	}
	printCheck(out, *dir, rep, time.Since(start))
	status := checkClean
	if rep.NumViolations > 0 {
		status = checkViolations
	}
	if *rebuild {
		differ, err := checkRebuild(out, *dir, *maxErrors)
		if err != nil {
			fmt.Fprintf(errOut, "sediment check: %v\n", err)
			return checkFailed
		}
		if differ {
			status = checkViolations
		}
	}
	return status
}

// checkRebuild rebuilds the store in dir from its newest snapshot and the
// change log after it (materialize.Rebuild) in a temporary directory,
// compares the result with the store key for key (CompareStores), prints
// the differences (at most max) and reports whether there were any.
func checkRebuild(out io.Writer, dir string, max int) (bool, error) {
	snaps, err := materialize.ListSnapshots(dir)
	if err != nil {
		return false, err
	}
	if len(snaps) == 0 {
		return false, fmt.Errorf("--rebuild: %s holds no snapshot (--snapshot-every)", filepath.Join(dir, materialize.SnapshotsDirName))
	}
	snap := snaps[len(snaps)-1]
	tmp, err := os.MkdirTemp("", "sediment-check-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(tmp)
	to := filepath.Join(tmp, "rebuilt")
	info, err := materialize.Rebuild(snap.Path, dir, to, materialize.Options{})
	if err != nil {
		return false, err
	}
	live, err := materialize.Open(materialize.Options{Dir: dir})
	if err != nil {
		return false, err
	}
	defer live.Close()
	rebuilt, err := materialize.Open(materialize.Options{Dir: to})
	if err != nil {
		return false, err
	}
	defer rebuilt.Close()
	diffs, n, err := materialize.CompareStores(live, rebuilt, max)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "rebuilt from snapshot %d and %d change-log records (%d..%d) in %s\n",
		info.Snapshot, info.Applied, info.First, info.Last, info.Duration.Round(time.Millisecond))
	for _, d := range diffs {
		fmt.Fprintf(out, "differs from the rebuild: %s\n", d)
	}
	fmt.Fprintf(out, "keys that differ from the rebuild: %d\n", n)
	return n > 0, nil
}

// checkTypes are the types in the order the summary lists them, with the
// name of their elements.
var checkTypes = []struct {
	t        codec.Type
	elements string
}{
	{codec.TypeString, ""},
	{codec.TypeHash, "hash fields"},
	{codec.TypeSet, "set members"},
	{codec.TypeZSet, "zset members"},
	{codec.TypeList, "list elements"},
	{codec.TypeStream, "stream entries"},
}

// printCheck prints the report of the check of dir, which took d.
//
//	checked ./data in 1.2s: the state of change-log record 5678
//	keys: 12 (3 string, 2 hash, 1 set, 2 zset, 2 list, 2 stream), 4 with a TTL
//	elements: 45 hash fields, 3 set members, 3000 zset members, 12 list elements, 40 stream entries
//	consumer groups: 3 groups, 5 consumers, 17 pending entries
//	stale index entries (allowed): 1 TTL, 0 IDMP expiry
//	violation: db 0 key "h": hash field count: stored 4, counted 3
//	violations: 1
func printCheck(out io.Writer, dir string, rep materialize.CheckReport, d time.Duration) {
	fmt.Fprintf(out, "checked %s in %s: the state of change-log record %d\n", dir, d.Round(time.Millisecond), rep.Applied)
	var keys int64
	var perType, elems []string
	for _, ct := range checkTypes {
		keys += rep.Keys[ct.t]
		perType = append(perType, fmt.Sprintf("%d %s", rep.Keys[ct.t], ct.t))
		if ct.elements != "" {
			elems = append(elems, fmt.Sprintf("%d %s", rep.Elements[ct.t], ct.elements))
		}
	}
	fmt.Fprintf(out, "keys: %d (%s), %d with a TTL\n", keys, strings.Join(perType, ", "), rep.Expiring)
	fmt.Fprintf(out, "elements: %s\n", strings.Join(elems, ", "))
	fmt.Fprintf(out, "consumer groups: %d groups, %d consumers, %d pending entries", rep.Groups, rep.Consumers, rep.Pending)
	if rep.Unindexed > 0 {
		fmt.Fprintf(out, " (%d without a delivery-time key: groups from before that index)", rep.Unindexed)
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "stale index entries (allowed): %d TTL, %d IDMP expiry\n", rep.StaleTTL, rep.StaleIDMP)
	for _, v := range rep.Violations {
		fmt.Fprintf(out, "violation: %s\n", v)
	}
	if n := int64(len(rep.Violations)); n < rep.NumViolations {
		fmt.Fprintf(out, "violations: %d (%d listed: --max-errors)\n", rep.NumViolations, n)
		return
	}
	fmt.Fprintf(out, "violations: %d\n", rep.NumViolations)
}
