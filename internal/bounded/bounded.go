// Package bounded is the one bounded map type: a cache that keeps the last
// keys put, so that what a long-lived process remembers per thread, channel
// or message does not grow with the number it has served. Every user
// answers a miss another way (the store, the platform's API, or a default).
package bounded

// Map keeps the last size keys put: putting a new key when it is full
// forgets the oldest one. It is not safe for concurrent use: its owner's
// mutex guards it. The zero Map holds nothing; make one with New.
type Map[K comparable, V any] struct {
	size int
	m    map[K]entry[V]
	ring []K // keys in the order they were put; ring[next] goes first
	next int
}

type entry[V any] struct {
	v    V
	slot int // the key's place in ring
}

// New returns an empty Map of size keys (at least one).
func New[K comparable, V any](size int) Map[K, V] {
	return Map[K, V]{size: max(size, 1), m: map[K]entry[V]{}}
}

// Get returns k's value and whether k is held.
func (b *Map[K, V]) Get(k K) (V, bool) {
	e, ok := b.m[k]
	return e.v, ok
}

// Has reports whether k is held.
func (b *Map[K, V]) Has(k K) bool {
	_, ok := b.m[k]
	return ok
}

// Put sets k's value; a key already held keeps its place.
func (b *Map[K, V]) Put(k K, v V) {
	if e, ok := b.m[k]; ok {
		e.v = v
		b.m[k] = e
		return
	}
	if len(b.ring) < b.size {
		b.ring = append(b.ring, k)
		b.m[k] = entry[V]{v: v, slot: len(b.ring) - 1}
		return
	}
	// The slot's key may have been deleted, and put again elsewhere.
	if old, ok := b.m[b.ring[b.next]]; ok && old.slot == b.next {
		delete(b.m, b.ring[b.next])
	}
	b.ring[b.next] = k
	b.m[k] = entry[V]{v: v, slot: b.next}
	b.next = (b.next + 1) % b.size
}

// Delete forgets k.
func (b *Map[K, V]) Delete(k K) { delete(b.m, k) }

// Len is the number of keys held.
func (b *Map[K, V]) Len() int { return len(b.m) }
