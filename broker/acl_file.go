package broker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The ACL file (--aclfile, Redis's aclfile): one user per line, as ACL
// LIST prints them ("user <name> <rule> ..."), read as Redis 7.0's
// ACLLoadFromFile reads it: a line is trimmed and split at each space (no
// quoting), a selector split across words is joined (mergeSelectorArgs),
// and empty lines are skipped (a comment is an error). Each user starts as
// ACL SETUSER creates one. Loading is all or nothing: every rule of every
// line is checked before any user changes, and the errors are Redis 7.0's,
// all of them in one reply. ACL SAVE writes ACL LIST's lines to a
// temporary file, syncs it and renames it over the file.
//
// Differs from Redis 7.0.15: a line whose unclosed selector follows other
// rules ("user u on (~k") makes redis-server crash (ACLLoadFromFile reads
// the merged rules it has just freed); here it is the same error as when
// the selector comes first.

// errACLFileSuffix ends a failed load's error, as Redis's.
const errACLFileSuffix = "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"

// parseACLFile returns the users the file's content defines, the default
// user included (as Redis starts it when the file has none), or the errors.
func parseACLFile(path string, data []byte) (map[string]*aclUser, error) {
	users := map[string]*aclUser{}
	var errs strings.Builder
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		words := strings.Split(line, " ")
		if words[0] != "user" || len(words) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", path, i+1)
			continue
		}
		name := words[1]
		if hasSpaces(name) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", path, i+1, name)
			continue
		}
		if _, dup := users[name]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", name, i+1)
			continue
		}
		u := newACLUser(name)
		users[name] = u
		rules, open := mergeSelectorArgs(words[2:])
		if open >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", path, i+1)
		}
		for _, r := range rules {
			r = strings.Trim(r, "\t\r\n")
			if err := u.apply(r); err == errString(aclErrUnknownCmd) {
				fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", path, i+1, r, err)
			} else if err != nil {
				fmt.Fprintf(&errs, "%s:%d: %s. ", path, i+1, err)
			}
		}
		u.seal()
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

// The words of ACL rules: a selector split across arguments (ACL SETUSER)
// or words (the ACL file), and the rules inside one.

// mergeSelectorArgs joins a selector split across arguments ("(~k", "+get)")
// into one ("(~k +get)"), as Redis 7.0's ACLMergeSelectorArguments does: an
// argument that starts with '(' and does not end with ')' opens one (and
// drops a selector still open), and the next argument ending with ')'
// closes it. open is the index of the argument that opened a selector left
// unclosed (merged is then nil), else -1.
func mergeSelectorArgs(args []string) (merged []string, open int) {
	open = -1
	var sel string
	for j, op := range args {
		if op != "" && op[0] == '(' && op[len(op)-1] != ')' {
			sel, open = op, j
			continue
		}
		if open >= 0 {
			sel += " " + op
			if op != "" && op[len(op)-1] == ')' {
				merged = append(merged, sel)
				open = -1
			}
			continue
		}
		merged = append(merged, op)
	}
	if open >= 0 {
		return nil, open
	}
	return merged, -1
}

// splitArgs splits line into arguments as Redis's sdssplitargs does
// (readerSplitArgs, the inline-request splitter); unbalanced quotes give
// nil.
func splitArgs(line string) []string {
	args, err := readerSplitArgs([]byte(line))
	if err != nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

// hasSpaces reports whether s holds white space or a NUL byte, which Redis
// refuses in user names and patterns (ACLStringHasSpaces).
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		if readerIsSpace(s[i]) || s[i] == 0 {
			return true
		}
	}
	return false
}
