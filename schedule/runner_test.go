package schedule

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// fired is one call of Fire.
type fired struct {
	schedule string
	at, when time.Time // the firing, and when Fire ran
	owner    string
}

// rec records firings across runners.
type rec struct {
	mu    sync.Mutex
	calls []fired
}

func (r *rec) fire(owner string, fail func(at time.Time) error) func(context.Context, *Schedule, time.Time) error {
	return func(_ context.Context, s *Schedule, at time.Time) error {
		if fail != nil {
			if err := fail(at); err != nil {
				return err
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, fired{s.Name, at, time.Now(), owner})
		return nil
	}
}

func (r *rec) all() []fired {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fired(nil), r.calls...)
}

// openStore opens a SQLite file on the bubble's clock.
func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// start runs a runner until the returned stop is called.
func start(t *testing.T, cfg Config) (stop func()) {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); Run(ctx, cfg) }()
	return func() { cancel(); <-done }
}

// synctest's clock starts at 2000-01-01 00:00 UTC.
func at(h, m int) time.Time { return time.Date(2000, 1, 1, h, m, 0, 0, time.UTC) }

// Firings run at their time, each once, for every schedule.
func TestFiringsRunOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		var r rec
		hourly := mustParse(t, Spec{Name: "hourly", Cron: "0 * * * *"})
		quarter := mustParse(t, Spec{Name: "quarter", Cron: "*/15 1 * * *"})
		stop := start(t, Config{Schedules: []*Schedule{hourly, quarter}, Store: db, Owner: "a", Fire: r.fire("a", nil)})
		time.Sleep(2*time.Hour + 50*time.Minute)
		stop()
		want := []time.Time{at(0, 0), at(1, 0), at(1, 0), at(1, 15), at(1, 30), at(1, 45), at(2, 0)}
		got := r.all()
		if len(got) != len(want) {
			t.Fatalf("%d firings, want %d: %+v", len(got), len(want), got)
		}
		for i, f := range got {
			if !f.at.Equal(want[i]) || !f.when.Equal(f.at) {
				t.Errorf("firing %d: %s at %v fired at %v; want at %v, on time", i, f.schedule, f.at, f.when, want[i])
			}
		}
	})
}

// Two runners on one store (two replicas): each firing runs on one.
func TestOneRunnerFiresEachFiring(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		var r rec
		s := mustParse(t, Spec{Name: "often", Cron: "*/5 * * * *"})
		stopA := start(t, Config{Schedules: []*Schedule{s}, Store: db, Owner: "a", Fire: r.fire("a", nil)})
		stopB := start(t, Config{Schedules: []*Schedule{s}, Store: db, Owner: "b", Fire: r.fire("b", nil)})
		time.Sleep(2*time.Hour - time.Minute)
		stopA()
		stopB()
		got := r.all()
		if len(got) != 24 {
			t.Fatalf("%d firings in two hours of a five-minute schedule on two runners, want 24: %+v", len(got), got)
		}
		seen := map[time.Time]bool{}
		for _, f := range got {
			if seen[f.at] {
				t.Errorf("the firing at %v ran twice", f.at)
			}
			seen[f.at] = true
		}
	})
}

// A firing missed while no runner ran runs once when one starts, if it is
// the latest; earlier ones do not run, and a restart runs nothing twice.
func TestMissedFiringRunsOnceAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		var r rec
		s := mustParse(t, Spec{Name: "hourly", Cron: "0 * * * *"})
		cfg := Config{Schedules: []*Schedule{s}, Store: db, Owner: "a", Fire: r.fire("a", nil)}

		stop := start(t, cfg)
		time.Sleep(30 * time.Minute) // fires 00:00
		stop()
		time.Sleep(3 * time.Hour) // down over 01:00, 02:00 and 03:00
		stop = start(t, cfg)      // 03:30
		synctest.Wait()
		got := r.all()
		if len(got) != 2 || !got[1].at.Equal(at(3, 0)) || !got[1].when.Equal(at(3, 30)) {
			t.Fatalf("firings %+v; want 00:00's, then 03:00's at the restart (03:30), and not 01:00's nor 02:00's", got)
		}
		time.Sleep(10 * time.Minute)
		stop()
		stop = start(t, cfg) // 03:40: 03:00's firing is done
		time.Sleep(30 * time.Minute)
		stop()
		got = r.all()
		if len(got) != 3 || !got[2].at.Equal(at(4, 0)) || !got[2].when.Equal(got[2].at) {
			t.Errorf("firings %+v; want 04:00's on time after them, nothing twice", got)
		}
	})
}

// A schedule that never fired starts with its next firing: being added is
// not missing one.
func TestNewScheduleMissedNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		time.Sleep(10 * time.Minute)
		var r rec
		s := mustParse(t, Spec{Name: "hourly", Cron: "0 * * * *"})
		stop := start(t, Config{Schedules: []*Schedule{s}, Store: db, Owner: "a", Fire: r.fire("a", nil)})
		time.Sleep(time.Hour)
		stop()
		if got := r.all(); len(got) != 1 || !got[0].at.Equal(at(1, 0)) {
			t.Errorf("firings %+v; want only 01:00's", got)
		}
	})
}

// A firing that fails is tried again until it succeeds.
func TestFailedFiringIsTriedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		var r rec
		s := mustParse(t, Spec{Name: "hourly", Cron: "0 * * * *"})
		time.Sleep(time.Minute) // not a new schedule's start: 01:00 is its first firing
		failures := 2
		stop := start(t, Config{Schedules: []*Schedule{s}, Store: db, Owner: "a", Fire: r.fire("a", func(time.Time) error {
			if failures > 0 {
				failures--
				return errors.New("the platform is down")
			}
			return nil
		})})
		time.Sleep(90 * time.Minute)
		stop()
		if got := r.all(); len(got) != 1 || !got[0].when.Equal(at(1, 2)) {
			t.Errorf("firings %+v; want one, at the third try two minutes late", got)
		}
	})
}

// A firing whose runner died after claiming it is taken over by another
// runner once its lease lapsed.
func TestDeadRunnersFiringIsTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := openStore(t, filepath.Join(t.TempDir(), "db"))
		defer db.Close()
		var r rec
		s := mustParse(t, Spec{Name: "hourly", Cron: "0 * * * *"})
		time.Sleep(time.Minute) // not a new schedule's start: 01:00 is its first firing
		// a claims 01:00's firing and dies in Fire.
		ctxA, dieA := context.WithCancel(context.Background())
		doneA := make(chan struct{})
		go func() {
			defer close(doneA)
			Run(ctxA, Config{Schedules: []*Schedule{s}, Store: db, Owner: "a", Logger: slog.New(slog.DiscardHandler),
				Fire: func(context.Context, *Schedule, time.Time) error { dieA(); return errors.New("killed") }})
		}()
		time.Sleep(59*time.Minute + 30*time.Second) // b starts after a claimed it
		stopB := start(t, Config{Schedules: []*Schedule{s}, Store: db, Owner: "b", Fire: r.fire("b", nil)})
		time.Sleep(30 * time.Minute)
		<-doneA
		stopB()
		got := r.all()
		if len(got) != 1 || got[0].owner != "b" || !got[0].at.Equal(at(1, 0)) || got[0].when.Before(at(1, 5)) || got[0].when.After(at(1, 7)) {
			t.Errorf("firings %+v; want 01:00's once, by b, once a's five-minute lease lapsed", got)
		}
	})
}
