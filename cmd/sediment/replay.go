package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/sediment-dev/sediment/materialize"
)

// runReplay is `sediment replay --from-snapshot DIR --log DIR --to DIR`:
// it rebuilds a data directory from a snapshot and the change log after
// it (materialize.Rebuild) and prints what it applied. --from-snapshot is
// a snapshot (a periodic one, <dir>/snapshots/<seq>, or SAVE's
// <dir>/checkpoint) or a data directory, whose newest periodic snapshot
// is taken; --log is a data directory or its changelog directory, which
// may be a running server's. --to must not exist or be empty.
func runReplay(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sediment replay", flag.ContinueOnError)
	snap := fs.String("from-snapshot", "", "the snapshot to start from, or a data directory (its newest snapshot)")
	logDir := fs.String("log", "", "the change log to apply after the snapshot: a data directory or its changelog directory")
	to := fs.String("to", "", "the data directory to write (must not exist, or be empty)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("replay: unexpected argument %q", fs.Arg(0))
	}
	if *snap == "" || *logDir == "" || *to == "" {
		return errors.New("replay: --from-snapshot, --log and --to are all needed")
	}
	from, err := snapshotDir(*snap)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	info, err := materialize.Rebuild(from, *logDir, *to, materialize.Options{})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	fmt.Fprintf(out, "rebuilt %s from %s (records up to %d) and %d records of %s (%d..%d) in %s\n",
		*to, from, info.Snapshot, info.Applied, *logDir, info.First, info.Last, info.Duration.Round(1e6))
	return nil
}

// snapshotDir returns dir when it is a checkpoint, or the newest periodic
// snapshot of the data directory dir.
func snapshotDir(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, materialize.SnapshotsDirName)); err != nil {
		return dir, nil
	}
	snaps, err := materialize.ListSnapshots(dir)
	if err != nil {
		return "", err
	}
	if len(snaps) == 0 {
		return "", fmt.Errorf("%s has no snapshot", filepath.Join(dir, materialize.SnapshotsDirName))
	}
	return snaps[len(snaps)-1].Path, nil
}
