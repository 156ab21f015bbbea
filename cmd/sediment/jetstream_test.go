package main

import (
	"testing"
	"time"
)

// TestParseFeedJetStream: the capture is off by default (replicas and the
// duplicates window 0: broker.Options takes 1 and 30 s); its flags and
// their SEDIMENT_* variables fill the config.
func TestParseFeedJetStream(t *testing.T) {
	none := func(string) string { return "" }
	c, err := parse(nil, none)
	if err != nil {
		t.Fatal(err)
	}
	if want := (jetStreamFlags{}); c.feedJS != want {
		t.Fatalf("defaults %+v, want %+v", c.feedJS, want)
	}
	c, err = parse([]string{"--feed-jetstream", "FEED", "--feed-jetstream-replicas", "3", "--feed-jetstream-max-age", "168h"},
		func(k string) string {
			return map[string]string{"SEDIMENT_FEED_JETSTREAM": "OTHER", "SEDIMENT_FEED_JETSTREAM_DUPLICATES": "1m"}[k]
		})
	if err != nil {
		t.Fatal(err)
	}
	if want := (jetStreamFlags{stream: "FEED", replicas: 3, maxAge: 168 * time.Hour, duplicates: time.Minute}); c.feedJS != want {
		t.Fatalf("parsed %+v, want %+v", c.feedJS, want)
	}
}
