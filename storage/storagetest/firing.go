package storagetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage"
)

// testFirings: a firing is leased to one owner at a time, taken over once
// its lease lapses, and never claimed again once it or a later firing of
// its schedule is done.
func testFirings(t *testing.T, s *suite) {
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	claim := func(name string, at time.Time, owner string) bool {
		t.Helper()
		ok, err := s.db.ClaimFiring(s.ctx, name, at, owner, time.Minute)
		if err != nil {
			t.Fatalf("ClaimFiring(%s, %v, %s): %v", name, at, owner, err)
		}
		return ok
	}
	if _, err := s.db.LastFiring(s.ctx, "nightly"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LastFiring of a schedule without firings = %v, want ErrNotFound", err)
	}
	if !claim("nightly", at, "a") {
		t.Fatal("the first claim of a firing failed")
	}
	if claim("nightly", at, "b") {
		t.Error("another owner claimed a firing under a live lease")
	}
	if !claim("nightly", at, "a") {
		t.Error("the owner could not renew its own lease")
	}
	if !claim("weekly", at, "b") {
		t.Error("another schedule's firing at the same time was not claimed")
	}
	if last, err := s.db.LastFiring(s.ctx, "nightly"); err != nil || !last.Equal(at) {
		t.Errorf("LastFiring = %v, %v; want %v", last, err, at)
	}

	// The lease lapses: another owner takes the firing over.
	s.clock.Advance(61 * time.Second)
	if !claim("nightly", at, "b") {
		t.Error("a lapsed lease was not taken over")
	}
	if claim("nightly", at, "a") {
		t.Error("the first owner claimed the firing back under b's live lease")
	}

	// Done: never again, by anyone, nor an earlier firing.
	if err := s.db.FinishFiring(s.ctx, "nightly", at); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Hour)
	if claim("nightly", at, "a") || claim("nightly", at, "b") {
		t.Error("a done firing was claimed again")
	}
	if claim("nightly", at.Add(-24*time.Hour), "a") {
		t.Error("a firing earlier than a done one was claimed")
	}
	next := at.Add(24 * time.Hour)
	if !claim("nightly", next, "a") {
		t.Error("the next firing was not claimed")
	}
	if last, err := s.db.LastFiring(s.ctx, "nightly"); err != nil || !last.Equal(next) {
		t.Errorf("LastFiring = %v, %v; want the claimed next one %v", last, err, next)
	}
	// A firing finished without a claim is done too.
	if err := s.db.FinishFiring(s.ctx, "hourly", at); err != nil {
		t.Fatal(err)
	}
	if claim("hourly", at, "a") {
		t.Error("a firing finished without a claim was claimed")
	}
	if _, err := s.db.ClaimFiring(s.ctx, "", at, "a", time.Minute); err == nil {
		t.Error("a firing without a schedule was claimed")
	}
	if _, err := s.db.ClaimFiring(s.ctx, "nightly", at, "a", 0); err == nil {
		t.Error("a firing was claimed with no ttl")
	}

	// Owners racing for one firing: one wins.
	race := at.Add(48 * time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.db.ClaimFiring(s.ctx, "nightly", race, string(rune('a'+i)), time.Minute)
			if err != nil {
				t.Errorf("ClaimFiring: %v", err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d owners claimed one firing, want 1", won)
	}
}
