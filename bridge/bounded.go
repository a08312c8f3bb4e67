package bridge

// bounded is a map that keeps the last size keys put: putting a new key
// when it is full forgets the oldest one. It backs the Bridge's per-thread
// caches, whose every miss is answered by the store, so that what the
// process keeps does not grow with the number of threads it has served.
// It is not safe for concurrent use: the Bridge's mutex guards it.
type bounded[K comparable, V any] struct {
	size int
	m    map[K]boundedEntry[V]
	ring []K // keys in the order they were put; ring[next] goes first
	next int
}

type boundedEntry[V any] struct {
	v    V
	slot int // the key's place in ring
}

func newBounded[K comparable, V any](size int) bounded[K, V] {
	return bounded[K, V]{size: max(size, 1), m: map[K]boundedEntry[V]{}}
}

func (b *bounded[K, V]) get(k K) (V, bool) {
	e, ok := b.m[k]
	return e.v, ok
}

func (b *bounded[K, V]) has(k K) bool {
	_, ok := b.m[k]
	return ok
}

// put sets k's value; a key already held keeps its place.
func (b *bounded[K, V]) put(k K, v V) {
	if e, ok := b.m[k]; ok {
		e.v = v
		b.m[k] = e
		return
	}
	if len(b.ring) < b.size {
		b.ring = append(b.ring, k)
		b.m[k] = boundedEntry[V]{v: v, slot: len(b.ring) - 1}
		return
	}
	// The slot's key may have been deleted, and put again elsewhere.
	if old, ok := b.m[b.ring[b.next]]; ok && old.slot == b.next {
		delete(b.m, b.ring[b.next])
	}
	b.ring[b.next] = k
	b.m[k] = boundedEntry[V]{v: v, slot: b.next}
	b.next = (b.next + 1) % b.size
}

func (b *bounded[K, V]) delete(k K) { delete(b.m, k) }

func (b *bounded[K, V]) len() int { return len(b.m) }
