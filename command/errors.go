package command

import (
	"bytes"
	"fmt"
	"strings"
)

// WireError is an error whose text is sent to the client as is (after
// '-'), in Redis's exact wording, so that clients matching on it behave as
// with Redis. Every such text of the command packages lives in this file.
type WireError string

func (e WireError) Error() string { return string(e) }

// Errors shared by command families (Redis 7.0 server.c shared objects,
// t_string.c, object.c).
const (
	ErrSyntax         WireError = "ERR syntax error"
	ErrNotInteger     WireError = "ERR value is not an integer or out of range"
	ErrNotFloat       WireError = "ERR value is not a valid float"
	ErrWrongType      WireError = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrOverflow       WireError = "ERR increment or decrement would overflow"
	ErrIncrNaN        WireError = "ERR increment would produce NaN or Infinity"
	ErrStringTooLong  WireError = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	ErrOffsetRange    WireError = "ERR offset is out of range"
	ErrDecrOverflow   WireError = "ERR decrement would overflow"
	ErrNaNOrInf       WireError = "ERR value is NaN or Infinity"
	ErrHashNotInteger WireError = "ERR hash value is not an integer"
	ErrHashNotFloat   WireError = "ERR hash value is not a float"
	ErrOutOfRange     WireError = "ERR value is out of range"
	ErrInvalidCursor  WireError = "ERR invalid cursor"
	ErrMustBePositive WireError = "ERR value is out of range, must be positive"
	ErrNumKeys        WireError = "ERR numkeys should be greater than 0"
	ErrNumKeysArgs    WireError = "ERR Number of keys can't be greater than number of args"
	ErrLimitNegative  WireError = "ERR LIMIT can't be negative"
	ErrNoSuchKey      WireError = "ERR no such key"
	ErrSameObject     WireError = "ERR source and destination objects are the same"
	ErrDBIndex        WireError = "ERR DB index is out of range"
	// The blocking commands' timeouts (getTimeoutFromObjectOrReply).
	ErrTimeoutNotFloat WireError = "ERR timeout is not a float or out of range"
	ErrTimeoutNegative WireError = "ERR timeout is negative"
	ErrTimeoutRange    WireError = "ERR timeout is out of range"
	// Not a Redis message: Redis cannot notice a client leaving while KEYS
	// runs. Sediment stops the scan (Guard), and this reply is rarely read:
	// the client has gone, or the server is closing the connection.
	ErrClientGone        WireError = "ERR command aborted: the connection is closing"
	ErrFreqNotTracked    WireError = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	ErrExpireNXAndOthers WireError = "ERR NX and XX, GT or LT options at the same time are not compatible"
	ErrExpireGTAndLT     WireError = "ERR GT and LT options at the same time are not compatible"
	ErrLCSNotString      WireError = "ERR The specified keys must contain string values"
	ErrLCSLenAndIdx      WireError = "ERR If you want both the length and indexes, please just use IDX."
	ErrLCSTooLong        WireError = "ERR String too long for LCS"
	ErrLCSTooBig         WireError = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	ErrLCSNoMemory       WireError = "ERR Insufficient memory, failed allocating transient memory for LCS"
)

// Errors of the stream commands (Redis 7.0 t_stream.c).
const (
	ErrInvalidStreamID         WireError = "ERR Invalid stream ID specified as stream command argument"
	ErrXAddIDSmall             WireError = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	ErrXAddIDZero              WireError = "ERR The ID specified in XADD must be greater than 0-0"
	ErrStreamExhausted         WireError = "ERR The stream has exhausted the last possible ID, unable to add more items"
	ErrElementsTooLarge        WireError = "ERR Elements are too large to be stored"
	ErrLimitNoStrategy         WireError = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	ErrMaxLenNeg               WireError = "ERR The MAXLEN argument must be >= 0."
	ErrLimitNeg                WireError = "ERR The LIMIT argument must be >= 0."
	ErrLimitNoApprox           WireError = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	ErrMaxLenAndMinID          WireError = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	ErrInvalidStart            WireError = "ERR invalid start ID for the interval"
	ErrInvalidEnd              WireError = "ERR invalid end ID for the interval"
	ErrXSetIDEntriesAddedNeg   WireError = "ERR entries_added must be positive"
	ErrXSetIDBelowMaxDeleted   WireError = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	ErrXSetIDBelowTop          WireError = "ERR The ID specified in XSETID is smaller than the target stream top item"
	ErrXSetIDEntriesAddedSmall WireError = "ERR The entries_added specified in XSETID is smaller than the target stream length"
	ErrBusyGroup               WireError = "BUSYGROUP Consumer Group name already exists"
	ErrXGroupNoKey             WireError = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	ErrEntriesRead             WireError = "ERR value for ENTRIESREAD must be positive or -1"
	ErrXClaimMinIdle           WireError = "ERR Invalid min-idle-time argument for XCLAIM"
	ErrXClaimIdle              WireError = "ERR Invalid IDLE option argument for XCLAIM"
	ErrXClaimTime              WireError = "ERR Invalid TIME option argument for XCLAIM"
	ErrXClaimRetryCount        WireError = "ERR Invalid RETRYCOUNT option argument for XCLAIM"
	ErrXAutoClaimMinIdle       WireError = "ERR Invalid min-idle-time argument for XAUTOCLAIM"
	ErrXAutoClaimCount         WireError = "ERR COUNT must be > 0"
	ErrXAutoClaimMemory        WireError = "ERR Insufficient memory, failed allocating transient memory, COUNT too high."
	// Not a Redis message: Sediment does not implement XINFO STREAM FULL.
)

// ErrWrongArgs is Redis's arity error: ERR wrong number of arguments for
// 'mset' command.
func ErrWrongArgs(name string) WireError {
	return WireError(fmt.Sprintf("ERR wrong number of arguments for '%s' command", name))
}

// ErrInvalidExpire is the invalid-expire-time error of the named command
// (lower case, as Redis prints it).
func ErrInvalidExpire(cmd string) WireError {
	return WireError(fmt.Sprintf("ERR invalid expire time in '%s' command", cmd))
}

// ErrValueRange is Redis's reply to an integer outside [min, max]
// (getRangeLongFromObjectOrReply without a message of its own).
func ErrValueRange(min, max int64) WireError {
	return WireError(fmt.Sprintf("ERR value is out of range, value must between %d and %d", min, max))
}

// ErrUnknownSubcommand is Redis's reply to an unknown subcommand of cmd:
// the subcommand as typed (control characters as spaces, at most 128
// bytes), the command upper-cased.
func ErrUnknownSubcommand(sub []byte, cmd string) WireError {
	return WireError(fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", Sanitize(sub, 128), strings.ToUpper(cmd)))
}

// ErrWrongArgsSub is Redis's arity error for a subcommand: ERR wrong
// number of arguments for 'xgroup|create' command.
func ErrWrongArgsSub(cmd string, sub []byte) WireError {
	return WireError(fmt.Sprintf("ERR wrong number of arguments for '%s|%s' command", cmd, strings.ToLower(Sanitize(sub, 64))))
}

// ErrSubcommandSyntax is Redis's addReplySubcommandSyntaxError: the
// subcommand as the client typed it, the command in upper case.
func ErrSubcommandSyntax(sub []byte, cmd string) WireError {
	return WireError(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.", Sanitize(sub, 128), strings.ToUpper(cmd)))
}

// ErrUnsupportedOption is EXPIRE's reply to an unknown option (the text up
// to its first NUL byte, as Redis prints a C string).
func ErrUnsupportedOption(opt []byte) WireError {
	return WireError(fmt.Sprintf("ERR Unsupported option %s", Sanitize(CString(opt), 128)))
}

// ErrXClaimOption is XCLAIM's reply to an argument it does not know (the
// text up to its first NUL byte).
func ErrXClaimOption(opt []byte) WireError {
	return WireError(fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", Sanitize(CString(opt), 128)))
}

// ErrNoSuchGroup is the NOGROUP error of XGROUP (SETID, CREATECONSUMER,
// DELCONSUMER) and XINFO CONSUMERS on a missing group.
func ErrNoSuchGroup(key, group []byte) WireError {
	return WireError(fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", Sanitize(group, 128), Sanitize(key, 128)))
}

// ErrNoGroup is the NOGROUP error of XPENDING, XCLAIM and XAUTOCLAIM.
func ErrNoGroup(key, group []byte) WireError {
	return WireError(fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'", Sanitize(key, 128), Sanitize(group, 128)))
}

// CString cuts b at its first NUL byte, as C's %s prints it (Redis
// formats some names with it).
func CString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// Sanitize makes b safe inside an error line, as Redis does: control
// characters become spaces, and b is cut to max bytes (Redis cuts names at
// 128).
func Sanitize(b []byte, maxLen int) string {
	b = b[:min(len(b), max(maxLen, 0))]
	out := make([]byte, len(b))
	for i, c := range b {
		if c < ' ' || c == 0x7f {
			c = ' '
		}
		out[i] = c
	}
	return string(out)
}
