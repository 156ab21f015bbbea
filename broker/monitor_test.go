package broker

// monitorCases are differential MONITOR scenarios, run by
// TestPubSubConformance: conn 0 monitors, conn 1 runs commands.
var monitorCases = []psCase{
	{name: "monitor", conns: 2, steps: []psStep{
		on(0, "MONITOR"),
		on(1, "SET", "k", "v 1"),
		recv(0),
		on(1, "GET", "nosuch"),
		recv(0),
		on(1, "SET", "b", "\x00\xff\"\\\n\r\t\a\b~"),
		recv(0),
		on(1, "NOSUCH"),
		on(1, "GET"),
		on(1, "AUTH", "x", "y"),
		recv(0),
		on(1, "SELECT", "2"),
		recv(0),
		on(1, "MULTI"),
		recv(0),
		on(1, "INCR", "n"),
		on(1, "EXEC"),
		recv(0),
		recv(0),
		on(1, "HELLO", "2", "AUTH", "default", "pw"),
		recv(0),
		on(1, "CONFIG", "GET", "x"),
		on(1, "SLOWLOG", "RESET"), // not LEN: a loaded machine logs slow commands
		on(1, "CLIENT", "ID"),
		recv(0),
		on(0, "GET", "k"),
		on(0, "SET", "k", "v"),
		on(0, "PING"),
		recv(0),
		on(0, "RESET"),
		on(1, "SET", "k", "v"),
		on(0, "GET", "k"),
	}},
}

func init() {
	pubsubCases = append(pubsubCases, monitorCases...)
}
