# Sediment — make targets. `make` alone prints this list.
GO       ?= go
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
FUZZ     ?= FuzzDecodeKey
FUZZTIME ?= 30s
FUZZPKG  ?= ./codec

.PHONY: all help run build churnbench zrankbench test test-short fuzz bench bench-rb bench-always bench-memory bench-large bench-churn bench-blocked bench-groups bench-zset bench-pubsub bench-otel pubsubbench otlpsink compose-up compose-down lint clean

all: help

help:
	@echo "make run         run the server on its defaults (127.0.0.1:6380, ./data, embedded NATS)"
	@echo "make test        run every test with -race (differential tests need redis-server on PATH)"
	@echo "make test-short  skip the slow tests"
	@echo "make fuzz        FUZZ=FuzzID FUZZPKG=./codec FUZZTIME=30s"
	@echo "make bench       bench-rb, bench-always, bench-large, bench-churn, bench-blocked, bench-groups, bench-zset, bench-pubsub, then bench-otel (long: see docs/perf.md)"
	@echo "make bench-rb    redis-benchmark against Sediment and redis-server, side by side"
	@echo "make bench-always   SET and XADD with appendfsync always on both servers"
	@echo "make bench-memory   10M 64-byte stream entries: memory, data size, restart time (minutes; not in make bench)"
	@echo "                 MEMORY_ENTRIES=10000000 (the default)"
	@echo "make bench-large SET, HSET, XADD, GET of 1, 10, 100 KB values, with disk bytes per value byte"
	@echo "make bench-churn churn workloads (capped streams, acked PELs, XDEL queues) against both"
	@echo "                 CHURN_N=20000 CHURN_BLOCKS=4 CHURN_MAX_TIME=60 for a quick run"
	@echo "make bench-blocked  W blocked XREADGROUP workers, one producer, against both"
	@echo "                 BLOCKED_N=2000 BLOCKED_WORKERS=\"10 100 1000\" BLOCKED_ROUNDS=1 (the defaults)"
	@echo "make bench-groups   consumer groups end to end: producers XADD, consumers XREADGROUP + XACK, against both"
	@echo "                 GROUPS_N=200000 GROUPS_RATE=20000 GROUPS_DURATION=10 GROUPS_PRODUCERS=4 GROUPS_CONSUMERS=4 (the defaults)"
	@echo "make bench-zset  sorted-set reads (ZRANK, ZRANGE by rank, ZCOUNT, ZSCORE) on one large set, against both"
	@echo "                 ZSET_SIZES=\"10000 1000000\" ZSET_CALLS=2000 (the defaults)"
	@echo "make bench-pubsub   PUBLISH rate and latency with 1 and 100 subscribers, against both"
	@echo "                 PUBSUB_SUBS=\"1 100\" PUBSUB_N=20000 (the defaults)"
	@echo "make bench-otel  SET, GET, XADD with telemetry off, metrics only, traces sampled at 0.01 and at 1 (OTLP to bin/otlpsink)"
	@echo "make build       build bin/sediment"
	@echo "make churnbench  build bin/churnbench, the churn load generator"
	@echo "make zrankbench  build bin/zrankbench, the sorted-set read benchmark"
	@echo "make pubsubbench build bin/pubsubbench, the pub/sub benchmark"
	@echo "make otlpsink    build bin/otlpsink, an OTLP/HTTP endpoint that discards (bench-otel)"
	@echo "make compose-up  Sediment with NATS, OpenTelemetry collector, Jaeger, Prometheus, Grafana (Docker; SEDIMENT_REQUIREPASS=...)"
	@echo "make lint        go vet + gofmt check"

run:
	@echo "> running sediment"
	$(GO) run -trimpath -ldflags "$(LDFLAGS)" ./cmd/sediment

build:
	@echo "> building bin/sediment"
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/sediment ./cmd/sediment

test:
	@echo "> running tests (-race)"
	$(GO) test -race -count=1 ./...
	@echo "> running the broker tests once more with a goroutine per connection (--event-loops -1: TLS clients and clients that left their loop take that path)"
	SEDIMENT_TEST_EVENT_LOOPS=-1 $(GO) test -count=1 ./broker
	@echo "> running the churn-cost test at full length (10,000 and 100,000 cycles; too slow under -race)"
	$(GO) test -count=1 -run '^TestChurnCostFlat$$' ./groups
	@echo "> running the sorted-set rank-block model walk (too slow under -race)"
	$(GO) test -count=1 -run '^TestRankBlocksModel$$' ./types/rzset
	@echo "> fuzzing the whole command surface for 30 s (FuzzDispatch: random arguments to every command, exactly one reply each)"
	$(GO) test -count=1 -run '^$$' -fuzz '^FuzzDispatch$$' -fuzztime 30s ./broker
	@echo "> loading the deployment files with their tools' loaders (deploy/validate, a module of its own)"
	cd deploy/validate && $(GO) test -count=1 ./...

test-short:
	$(GO) test -race -short -count=1 ./...

fuzz:
	$(GO) test $(FUZZPKG) -run='^$$' -fuzz='^$(FUZZ)$$' -fuzztime=$(FUZZTIME)

churnbench:
	@echo "> building bin/churnbench"
	$(GO) build -trimpath -o bin/churnbench ./cmd/churnbench

zrankbench:
	@echo "> building bin/zrankbench"
	$(GO) build -trimpath -o bin/zrankbench ./cmd/zrankbench

pubsubbench:
	@echo "> building bin/pubsubbench"
	$(GO) build -trimpath -o bin/pubsubbench ./cmd/pubsubbench

otlpsink:
	@echo "> building bin/otlpsink"
	$(GO) build -trimpath -o bin/otlpsink ./cmd/otlpsink

bench: build churnbench zrankbench pubsubbench otlpsink
	@echo "> benchmarking against redis-server (redis-benchmark, appendfsync always, large values, churn, blocked, groups, sorted sets, then pub/sub)"
	./scripts/bench.sh all

bench-rb: build
	@echo "> benchmarking against redis-server (redis-benchmark)"
	./scripts/bench.sh redis-benchmark

bench-always: build
	@echo "> benchmarking against redis-server (appendfsync always on both)"
	./scripts/bench.sh always

bench-memory: build
	@echo "> benchmarking against redis-server (memory and restart with 10M stream entries)"
	./scripts/bench.sh memory

bench-churn: build churnbench
	@echo "> benchmarking against redis-server (churn)"
	./scripts/bench.sh churn

bench-large: build
	@echo "> benchmarking against redis-server (large values)"
	./scripts/bench.sh large

bench-blocked: build churnbench
	@echo "> benchmarking against redis-server (blocked XREADGROUP workers)"
	./scripts/bench.sh blocked

bench-groups: build churnbench
	@echo "> benchmarking against redis-server (consumer groups end to end)"
	./scripts/bench.sh groups

bench-zset: build zrankbench
	@echo "> benchmarking against redis-server (sorted-set reads by rank)"
	./scripts/bench.sh zset

bench-pubsub: build pubsubbench
	@echo "> benchmarking against redis-server (pub/sub)"
	./scripts/bench.sh pubsub

bench-otel: build otlpsink
	@echo "> benchmarking telemetry's cost (off, sampled at 0, sampled at 1)"
	./scripts/bench.sh otel

compose-up:
	@echo "> starting Sediment, NATS (3 nodes), the OpenTelemetry collector, Jaeger, Prometheus and Grafana"
	docker compose -f deploy/compose.yaml up -d --build

compose-down:
	docker compose -f deploy/compose.yaml down

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

clean:
	rm -rf bin
