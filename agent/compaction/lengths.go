package compaction

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The lengths EstimateTokens measured, so that estimating the same messages
// again — every turn's context size, each cut point and compaction plan goes
// over the whole live context — does not read their text again: a JavaScript
// string knows its length, a Go string must be scanned for it, and so must
// the JSON of tool-call arguments.
//
// A remembered length cannot go stale:
//
//   - Text is found by the address and length of its string. Go strings never
//     change, and the entry holds the address as a pointer, which keeps the
//     string's memory alive, so no other text can come to live at that
//     address while the entry exists. An edited message holds a new string.
//   - Arguments ([]byte, which can be changed in place) are found by a hash of
//     their content (64-bit maphash, seeded at random per process) and their
//     length: changed arguments are other arguments.
//
// The cache is a fixed table of slots, each an atomically replaced pointer to
// an immutable entry, so that reading it takes no lock and a length is never
// read torn. Four slots can hold a key; a new entry takes an empty one or
// replaces one of them, and what is replaced is collected: the cache holds at
// most cacheSlots entries and cacheBytes of measured text. (A string that points
// into a larger buffer, as decoded sessions' strings do, keeps that buffer.)
var lengths lengthCache

// Texts and arguments shorter than these are measured faster than looked up.
const (
	minCachedText = 128
	minCachedArgs = 16
)

// Bounds of the cache: the texts of a few long sessions.
const (
	slotBits   = 16
	cacheSlots = 1 << slotBits
	ways       = 4 // the slots a key may be in: a set of 32 bytes
	cacheBytes = 32 << 20
)

type lengthCache struct {
	once   sync.Once
	seed   maphash.Seed
	slots  []atomic.Pointer[lengthEntry]
	bytes  atomic.Int64 // the measured sizes of the entries in slots
	misses atomic.Int64 // measurements made (tests)
}

// lengthEntry is one remembered length: of the text at p, n bytes long, or
// (p nil) of arguments of n bytes hashing to h.
type lengthEntry struct {
	p     *byte
	h     uint64
	n     int
	units int
}

func (c *lengthCache) init() {
	c.once.Do(func() {
		c.seed = maphash.MakeSeed()
		c.slots = make([]atomic.Pointer[lengthEntry], cacheSlots)
	})
}

// textLen is utf16Len, remembered for long texts.
func textLen(s string) int {
	if len(s) < minCachedText {
		return utf16Len(s)
	}
	return lengths.text(s)
}

func (c *lengthCache) text(s string) int {
	c.init()
	p := unsafe.StringData(s)
	h := uint64(uintptr(unsafe.Pointer(p))) * 0x9E3779B97F4A7C15
	i := h >> (64 - slotBits) &^ (ways - 1)
	for k := range uint64(ways) {
		if e := c.slots[i+k].Load(); e != nil && e.p == p && e.n == len(s) {
			return e.units
		}
	}
	units := utf16Len(s)
	c.store(i, &lengthEntry{p: p, n: len(s), units: units})
	return units
}

func (c *lengthCache) arguments(raw []byte) int {
	c.init()
	h := maphash.Bytes(c.seed, raw)
	i := h >> (64 - slotBits) &^ (ways - 1)
	for k := range uint64(ways) {
		if e := c.slots[i+k].Load(); e != nil && e.p == nil && e.h == h && e.n == len(raw) {
			return e.units
		}
	}
	units := measureArguments(raw)
	c.store(i, &lengthEntry{h: h, n: len(raw), units: units})
	return units
}

// store puts e in one of the ways slots from i: an empty one, else one
// chosen in turn by the count of measurements.
func (c *lengthCache) store(i uint64, e *lengthEntry) {
	n := uint64(c.misses.Add(1))
	if int64(e.n) > cacheBytes/64 || c.bytes.Load()+int64(e.n) > cacheBytes {
		return // too large to keep, or the cache is full of long texts
	}
	j := i + n%ways
	for k := range uint64(ways) {
		if c.slots[i+k].Load() == nil {
			j = i + k
			break
		}
	}
	c.swapIn(j, e)
}

func (c *lengthCache) swapIn(i uint64, e *lengthEntry) {
	c.bytes.Add(int64(e.n))
	if old := c.slots[i].Swap(e); old != nil {
		c.bytes.Add(-int64(old.n))
	}
}
