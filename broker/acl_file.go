package broker

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tidwall/redcon"
)

// The ACL file (--aclfile, Redis's aclfile): one user per line, as ACL
// LIST prints them ("user <name> <rule> ..."); empty lines are skipped
// (and, as in Redis 7.0, a comment is an error). Each user starts as ACL
// SETUSER creates one. Loading is all or nothing: every line is checked
// before any user changes, and the errors are Redis 7.0's, all of them in
// one reply. ACL SAVE writes ACL LIST's lines to a temporary file, syncs it
// and renames it over the file.

// errACLFileSuffix ends a failed load's error, as Redis's.
const errACLFileSuffix = "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"

// parseACLFile returns the users the file's content defines, the default
// user included (as Redis starts it when the file has none), or the errors.
func parseACLFile(path string, data []byte) (map[string]*aclUser, error) {
	users := map[string]*aclUser{}
	var errs strings.Builder
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		args, err := redcon.Parse(append(line, '\r', '\n'))
		words := args.Args
		if err != nil || len(words) < 2 || string(words[0]) != "user" {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, i+1)
			continue
		}
		name := string(words[1])
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, i+1)
			continue
		}
		u := newACLUser(name)
		ok := true
		for _, w := range words[2:] {
			if err := u.apply(string(w)); err != nil {
				if w[0] == '+' || w[0] == '-' {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", path, i+1, w, err)
				} else {
					fmt.Fprintf(&errs, "%s:%d: %s. ", path, i+1, err)
				}
				ok = false
				break
			}
		}
		if ok {
			u.seal()
			users[name] = u
		}
	}
	if errs.Len() > 0 {
		return nil, errors.New(errs.String() + errACLFileSuffix)
	}
	if _, ok := users["default"]; !ok {
		users["default"] = newDefaultUser("")
	}
	return users, nil
}

// load reads the ACL file and replaces the users with its users: a user
// still defined keeps its connections, which take its new rules; the
// connections of a user the file no longer has are closed (close).
func (a *aclUsers) load(path string, close func(gone []*aclSlot)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("Error loading ACLs, opening file '%s': %s", path, strerror(err))
	}
	users, err := parseACLFile(path, data)
	if err != nil {
		return err
	}
	a.mu.Lock()
	var gone []*aclSlot
	for name, slot := range a.users {
		if _, ok := users[name]; !ok {
			delete(a.users, name)
			slot.u.Store(nil)
			gone = append(gone, slot)
		}
	}
	for name, u := range users {
		slot := a.users[name]
		if slot == nil {
			slot = &aclSlot{name: name}
			a.users[name] = slot
		}
		slot.u.Store(u)
	}
	a.mu.Unlock()
	if len(gone) > 0 && close != nil {
		close(gone)
	}
	return nil
}

// save writes the users to path (ACL SAVE): a temporary file in the same
// directory, synced, then renamed over it.
func (a *aclUsers) save(path string) error {
	var b strings.Builder
	for _, name := range a.sortedUserNames() {
		if s := a.slot(name); s != nil {
			if u := s.u.Load(); u != nil {
				b.WriteString(u.describe())
				b.WriteByte('\n')
			}
		}
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".acl-*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// strerror is err's system error text as C's strerror words it ("No such
// file or directory"), or err's text.
func strerror(err error) string {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err.Error()
	}
	t := errno.Error()
	return strings.ToUpper(t[:1]) + t[1:]
}
