package bounded

import (
	"strconv"
	"testing"
)

func TestMapKeepsTheLastKeysPut(t *testing.T) {
	b := New[string, int](3)
	for i := range 5 {
		b.Put("k"+strconv.Itoa(i), i)
	}
	if b.Len() != 3 || b.Has("k0") || b.Has("k1") {
		t.Fatalf("holds %d keys (k0 %v, k1 %v), want the last 3", b.Len(), b.Has("k0"), b.Has("k1"))
	}
	if v, ok := b.Get("k4"); !ok || v != 4 {
		t.Fatalf("k4 = %d, %v", v, ok)
	}
	// Putting a key held keeps its place: k2 is still the oldest.
	b.Put("k2", 20)
	b.Put("k5", 5)
	if b.Has("k2") || !b.Has("k3") {
		t.Fatalf("k2 %v, k3 %v after k5: want k2 forgotten, the oldest", b.Has("k2"), b.Has("k3"))
	}
	// A key deleted and put again takes the next slot, here its old one.
	b.Delete("k3")
	b.Put("k3", 33)
	b.Put("k6", 6) // forgets k4, the oldest
	if v, ok := b.Get("k3"); !ok || v != 33 {
		t.Fatalf("k3 = %d, %v after its old slot was reused", v, ok)
	}
	if b.Len() != 3 {
		t.Fatalf("holds %d keys, want 3", b.Len())
	}
}

// A key deleted and put again in another slot is not forgotten when its
// old slot is reused.
func TestMapDeletedKeyPutElsewhere(t *testing.T) {
	b := New[string, int](3)
	b.Put("a", 1)
	b.Put("b", 2) // slot 1
	b.Put("c", 3)
	b.Delete("b")
	b.Put("b", 20) // slot 0: forgets a
	b.Put("d", 4)  // slot 1, b's old one
	if v, ok := b.Get("b"); !ok || v != 20 {
		t.Fatalf("b = %d, %v after its old slot was reused, want 20", v, ok)
	}
	if b.Has("a") || !b.Has("c") || !b.Has("d") || b.Len() != 3 {
		t.Fatalf("a %v, c %v, d %v, %d keys; want b, c and d", b.Has("a"), b.Has("c"), b.Has("d"), b.Len())
	}
}
