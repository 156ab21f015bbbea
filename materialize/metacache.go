package materialize

import (
	"github.com/sediment-dev/sediment/codec"
)

// metaCache is the writer's in-memory index of key metadata: a cache over
// the T keys, so that a write's decision usually finds its key's type, TTL
// and stream metadata without a Pebble lookup. Only the writer goroutine
// touches it: it is filled by decisions' reads and updated from every staged
// OpSetMeta/OpDelKey event, so it always reflects the state decisions see
// (including earlier writes of the same commit group). FLUSHDB/FLUSHALL and
// a failed group commit clear it; a restart starts it empty.
type metaCache struct {
	m map[string]cachedMeta
}

type cachedMeta struct {
	meta   codec.Meta
	exists bool
}

const (
	// metaCacheMax bounds the number of cached keys; past it the cache is
	// dropped and refills from Pebble.
	metaCacheMax = 1 << 16
	// metaCacheMaxValue is the largest string value cached with its metadata.
	metaCacheMaxValue = 256
)

func newMetaCache() *metaCache { return &metaCache{m: make(map[string]cachedMeta)} }

func cacheKey(db uint8, key []byte) string {
	b := make([]byte, 0, 1+len(key))
	b = append(b, db)
	return string(append(b, key...))
}

// get returns the cached metadata of (db, key), if cached.
func (c *metaCache) get(db uint8, key []byte) (cachedMeta, bool) {
	var buf [64]byte
	k := append(append(buf[:0], db), key...)
	e, ok := c.m[string(k)]
	return e, ok
}

// put caches m (exists false: the key is absent). m.Value must not alias
// memory that changes later.
func (c *metaCache) put(db uint8, key []byte, m codec.Meta, exists bool) {
	if exists && len(m.Value) > metaCacheMaxValue {
		delete(c.m, cacheKey(db, key))
		return
	}
	if len(c.m) >= metaCacheMax {
		c.clear()
	}
	c.m[cacheKey(db, key)] = cachedMeta{m, exists}
}

func (c *metaCache) clear() { c.m = make(map[string]cachedMeta) }

// observe updates the cache from a staged event.
func (c *metaCache) observe(e codec.Event) {
	switch e.Op {
	case codec.OpSetMeta:
		m, err := codec.DecodeMeta(e.Args[0])
		if err != nil {
			delete(c.m, cacheKey(e.DB, e.Key))
			return
		}
		m.Value = append([]byte(nil), m.Value...)
		c.put(e.DB, e.Key, m, true)
	case codec.OpDelKey:
		c.put(e.DB, e.Key, codec.Meta{}, false)
	case codec.OpFlushDB, codec.OpFlushAll:
		c.clear()
	}
}
