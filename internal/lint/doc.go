// Package lint holds no code: its tests enforce Sediment's package
// dependency rules with `go list`, so that a forbidden import fails
// `go test ./...` like any other regression.
//
// The rules (docs/architecture.md):
//
//   - only materialize imports Pebble (github.com/cockroachdb/pebble/v2);
//     every other package of ours reaches it, if at all, through materialize;
//   - only broker and cmd/sediment import github.com/tidwall/redcon;
//   - codec and internal/glob, internal/num, internal/lcs, internal/ldouble,
//     internal/redistest import only the standard library;
//   - streams and groups import neither broker, redcon nor NATS;
//   - command packages (command/...) import neither broker, redcon nor NATS;
//   - type packages (types/...) and keyspace import none of broker,
//     command, redcon, NATS;
//   - materialize imports none of broker, command, streams, groups, types.
package lint
