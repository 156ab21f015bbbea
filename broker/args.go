package broker

import "github.com/sediment-dev/sediment/command"

// parseInt parses a signed 64-bit decimal the way Redis's string2ll does:
// no spaces, no '+', no leading zeros, no overflow. It is the reader's
// parser too, so that arguments and protocol headers agree.
func parseInt(b []byte) (int64, bool) { return command.ParseInt(b) }

// equalFold reports whether b equals the ASCII upper-case word s, ignoring case.
func equalFold(b []byte, s string) bool { return command.EqualFold(b, s) }
