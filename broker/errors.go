package broker

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sediment-dev/sediment/command"
	"github.com/sediment-dev/sediment/materialize"
)

// Every string Sediment sends as a Redis error lives in this file, in Redis's
// exact wording (Redis 7.0 src/server.c shared objects, t_stream.c,
// networking.c) so that clients that match on it behave as with Redis.

// wireError is an error whose text is sent to the client as is (after
// '-'); the command packages' errors are the same type.
type wireError = command.WireError

const (
	errSyntax                   = command.ErrSyntax
	errNotInteger               = command.ErrNotInteger
	errWrongType                = command.ErrWrongType
	errDBIndex                  = command.ErrDBIndex
	errInternal       wireError = "ERR internal error"
	errBadClientName  wireError = "ERR Client names cannot contain spaces, newlines or special characters."
	errUnblockReason  wireError = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
	errUnblocked      wireError = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
	errMultiNested    wireError = "ERR MULTI calls can not be nested"
	errExecNoMulti    wireError = "ERR EXEC without MULTI"
	errDiscardNoMulti wireError = "ERR DISCARD without MULTI"
	errWatchInMulti   wireError = "ERR WATCH inside MULTI is not allowed"
	errExecAbort      wireError = "EXECABORT Transaction discarded because of previous errors."
	errProtoVersion   wireError = "ERR Protocol version is not an integer or out of range"
	errNoProto        wireError = "NOPROTO unsupported protocol version"
	errWrongPass      wireError = "WRONGPASS invalid username-password pair or user is disabled."
	errNoAuth         wireError = "NOAUTH Authentication required."
	// COMMAND GETKEYS (Redis 7.0 server.c getKeysSubcommandImpl).
	errSlowlogCount          wireError = "ERR count should be greater than or equal to -1"
	errMonitorKeyspace       wireError = "ERR Replica can't interact with the keyspace"
	errNoSuchClient          wireError = "ERR No such client"
	errNoShutdown            wireError = "ERR No shutdown in progress."
	errNotInMulti            wireError = "ERR Command not allowed inside a transaction"
	errClientIDPositive      wireError = "ERR client-id should be greater than 0"
	errGetKeysInvalidCommand wireError = "ERR Invalid command specified"
	errGetKeysNoKeys         wireError = "ERR The command has no key arguments"
	errGetKeysArity          wireError = "ERR Invalid number of arguments specified for command"
	errGetKeysInvalid        wireError = "ERR Invalid arguments specified for command"
	errHelloNoAuth           wireError = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	errAuthNoPassword        wireError = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
)

// errProtectedMode is Redis 7.0's reply to a connection that protected
// mode refuses, before it closes the connection.
const errProtectedMode = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// CLIENT TRACKING and CLIENT CACHING errors (Redis 7.0 networking.c).
const (
	errTrackingPrefixNeedsBcast wireError = "ERR PREFIX option requires BCAST mode to be enabled"
	errTrackingSwitchBcast      wireError = "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	errTrackingBcastOpt         wireError = "ERR OPTIN and OPTOUT are not compatible with BCAST"
	errTrackingOptInOut         wireError = "ERR You can't specify both OPTIN mode and OPTOUT mode"
	errTrackingSwitchOpt        wireError = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	errTrackingNoRedirect       wireError = "ERR The client ID you want redirect to does not exist"
	errTrackingOneRedirect      wireError = "ERR A client can only redirect to a single other client"
	errTrackingCachingOff       wireError = "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"
	errTrackingCachingYes       wireError = "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
	errTrackingCachingNo        wireError = "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
)

// errTrackingPrefixExisting and errTrackingPrefixOther refuse overlapping
// BCAST prefixes.
func errTrackingPrefixExisting(p, q string) wireError {
	return wireError(fmt.Sprintf("ERR Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a single client must not overlap.", p, q))
}

func errTrackingPrefixOther(p, q string) wireError {
	return wireError(fmt.Sprintf("ERR Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for a single client must not overlap.", p, q))
}

// errPubSubUnavailable is the reply to a subscription when the process
// cannot subscribe to NATS (not a Redis message: Redis has no such fault).
func errPubSubUnavailable(err error) wireError {
	return wireError("ERR pub/sub unavailable: cannot subscribe to NATS: " + err.Error())
}

// errPublishTooLarge is the reply to a PUBLISH whose message does not fit
// in one NATS message (not a Redis message: docs/pubsub.md).
func errPublishTooLarge(max int64) wireError {
	return wireError(fmt.Sprintf("ERR message too large to publish: the NATS max_payload is %d bytes", max))
}

// errConfigSetUnknown is CONFIG SET's reply to a parameter it cannot set.
func errConfigSetUnknown(name []byte) wireError {
	return wireError(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", command.CString(name)))
}

// errConfigSetFailed is CONFIG SET's reply to a bad value.
func errConfigSetFailed(name, why string) wireError {
	return wireError(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
}

// errHelloOption is HELLO's reply to an unknown option (or one missing its
// arguments); like Redis's C formatting, opt ends at its first NUL byte.
func errHelloOption(opt []byte) wireError {
	return wireError(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", command.CString(opt)))
}

// Protocol errors of the request reader (reader.go), replied before the
// connection is closed.
const (
	readerErrMultibulkLen = "ERR Protocol error: invalid multibulk length"
	readerErrBulkLen      = "ERR Protocol error: invalid bulk length"
	readerErrTooBigMbulk  = "ERR Protocol error: too big mbulk count string"
	readerErrTooBigBulk   = "ERR Protocol error: too big bulk count string"
	readerErrTooBigInline = "ERR Protocol error: too big inline request"
	readerErrUnbalanced   = "ERR Protocol error: unbalanced quotes in request"
	// Not a Redis message: Redis blindly skips the two bytes after a bulk
	// payload. Sediment insists that they are CR LF.
	readerErrBulkCRLF = "ERR Protocol error: expected '\\r\\n' after bulk"
	// Not a Redis message: Redis closes such a client silently (after
	// logging it). Sediment replies this error and then closes.
	readerErrQueryBuffer = "ERR Protocol error: query buffer limit exceeded"
)

// errWrongArgs is Redis's arity error: ERR wrong number of arguments for 'xadd' command.
func errWrongArgs(name string) wireError { return command.ErrWrongArgs(strings.ToLower(name)) }

// errUnknownCommand is Redis's reply to an unknown command: the name and up
// to the first arguments, each quoted, as in server.c processCommand.
// Like Redis's C formatting, each argument ends at its first NUL byte.
func errUnknownCommand(args [][]byte) wireError {
	var list strings.Builder
	for _, a := range args[1:] {
		if list.Len() >= 128 {
			break
		}
		fmt.Fprintf(&list, "'%s' ", sanitize(command.CString(a), 128-list.Len()))
	}
	return wireError(fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", sanitize(command.CString(args[0]), 128), list.String()))
}

// errUnknownSubcommand is Redis's reply to an unknown subcommand of cmd.
func errUnknownSubcommand(sub []byte, cmd string) wireError {
	return command.ErrUnknownSubcommand(sub, cmd)
}

// errWrongArgsSub is Redis's arity error for a subcommand:
// ERR wrong number of arguments for 'xgroup|create' command.
func errWrongArgsSub(cmd string, sub []byte) wireError {
	return command.ErrWrongArgsSub(cmd, sub)
}

// errNoGroupRead is XREADGROUP's NOGROUP error.

// errValueRange is Redis's reply to an integer outside [min, max]
// (getRangeLongFromObjectOrReply without a message of its own).
func errValueRange(min, max int64) wireError {
	return wireError(fmt.Sprintf("ERR value is out of range, value must between %d and %d", min, max))
}

// sanitize makes b safe inside an error line (command.Sanitize).
func sanitize(b []byte, max int) string { return command.Sanitize(b, max) }

// toWire maps a handler's error to the text sent after '-'. Domain sentinels
// map to Redis's wording; anything unmapped becomes "ERR internal error" and
// ok is false so the caller logs it (its text must never reach the client).
func toWire(err error) (msg string, ok bool) {
	var we wireError
	switch {
	case errors.As(err, &we):
		return string(we), true
	case errors.Is(err, materialize.ErrWrongType):
		return string(errWrongType), true
	}
	var f *materialize.StorageFault
	if errors.As(err, &f) {
		return string(errMisconf(f)), true
	}
	return string(errInternal), false
}

// errMisconf is the reply to a write refused by a storage fault, in the
// words of Redis 7.0's AOF error (server.c writeCommandsGetDiskErrorMessage:
// "MISCONF Errors writing to the AOF file: No space left on device"), the
// change log or the data files in the AOF file's place.
func errMisconf(f *materialize.StorageFault) wireError {
	return wireError("MISCONF Errors writing to the " + f.Where + ": " + command.Sanitize([]byte(f.Cause()), 200))
}

// errExecAbortBecause is EXEC's reply when EXEC itself is refused (Redis
// 7.0 multi.c execCommandAbort), msg the refusal without its dash.
func errExecAbortBecause(msg string) wireError {
	return wireError("EXECABORT Transaction discarded because of: " + msg)
}

// errOutputLimit ends a connection whose replies reached
// client-output-buffer-limit's normal class (conn.flushLimited).
var errOutputLimit = errors.New("broker: output buffer limit reached")
