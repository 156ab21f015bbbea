package broker

import "fmt"

// reservedFDs are the file descriptors kept for what is not a client:
// Redis's 32, plus 128 for Pebble's open sstables and blob files, the
// change-log segments and the NATS connections.
const reservedFDs = 160

// fitMaxClients fits maxclients to an open-files limit as Redis's
// adjustOpenFilesLimit does: unchanged when limit (0: unknown) leaves
// reservedFDs beside the clients; else reduced to limit-reservedFDs with a
// warning in Redis's words; an error when not even one client fits.
func fitMaxClients(maxclients int, limit uint64) (int, string, error) {
	need := uint64(maxclients) + reservedFDs
	if limit == 0 || limit >= need {
		return maxclients, "", nil
	}
	if limit <= reservedFDs {
		return 0, "", fmt.Errorf("broker: your current 'ulimit -n' of %d is not enough for the server to start; please increase your open file limit to at least %d", limit, reservedFDs+1)
	}
	fit := int(limit - reservedFDs)
	return fit, fmt.Sprintf("You requested maxclients of %d requiring at least %d max file descriptors. Current maximum open files is %d. maxclients has been reduced to %d to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.",
		maxclients, need, limit, fit), nil
}
