package broker

import "github.com/tidwall/redcon"

var nullArray = []byte("*-1\r\n")

// writeNullArray writes RESP2's null array (*-1): EXEC's reply when a
// watched key was touched or the transaction was discarded.
func writeNullArray(w *redcon.Writer) { w.WriteRaw(nullArray) }
