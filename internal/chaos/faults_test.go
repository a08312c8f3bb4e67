package chaos

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// asked records when the model was first asked about each token.
type asked struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (a *asked) wrap(next func(llmfake.Request) llmfake.Response) func(llmfake.Request) llmfake.Response {
	return func(r llmfake.Request) llmfake.Response {
		now := time.Now()
		a.mu.Lock()
		for _, m := range r.Messages {
			if m.Role != "user" {
				continue
			}
			for _, tk := range tokenRE.FindAllString(m.Content, -1) {
				if _, ok := a.first[tk]; !ok {
					a.first[tk] = now
				}
			}
		}
		a.mu.Unlock()
		return next(r)
	}
}

// delays returns, for every token sent, how long after it was raised the
// model was first asked about it, sorted.
func (a *asked) delays(threads []*chatThread) []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ds []time.Duration
	for _, th := range threads {
		for tk, at := range th.sent {
			if got, ok := a.first[tk]; ok {
				ds = append(ds, got.Sub(at))
			}
		}
	}
	slices.Sort(ds)
	return ds
}

// readyz reads a replica's /readyz: its status and body ("" and 0 when it
// does not answer).
func (r *replica) readyz() (int, string) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", r.port))
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// allReady waits until every replica's /readyz answers 200 and returns when.
func (e *env) allReady(rs []*replica, d time.Duration) (time.Time, error) {
	err := e.poll("every replica ready", d, 20*time.Millisecond, func() (bool, error) {
		for _, r := range rs {
			if code, body := r.readyz(); code != http.StatusOK {
				return false, fmt.Errorf("replica %d: %d %q", r.n, code, body)
			}
		}
		return true, nil
	})
	return time.Now(), err
}

// pgOutage is how long TestPostgresRestartAndOutage keeps PostgreSQL
// unreachable: THREADSMITH_FAULT_PG_OUTAGE, else 6 s, three times the test's
// lease ttl (2 s), so that every lease expires during it as a 30 s outage
// would with a deployment's 30 s ttl and more.
func pgOutage(t *testing.T) time.Duration {
	if s := os.Getenv("THREADSMITH_FAULT_PG_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("THREADSMITH_FAULT_PG_OUTAGE=%q: want a positive duration", s)
		}
		return d
	}
	return 6 * time.Second
}

// TestPostgresRestartAndOutage runs two replicas on a PostgreSQL of the
// test's own, reached through a TCP proxy, while mentions and follow-ups
// arrive; PostgreSQL is restarted (an immediate stop: a crash, WAL replayed
// at start), then made unreachable for pgOutage (the proxy refuses and cuts
// every connection). During the outage every replica's /readyz must say
// storage is not answering; after it, both must be ready again, every
// message must reach the model once and every run be answered once (the
// chaos audit), and no replica may exit by itself. It logs the figures:
// time to recover from each fault, messages delayed, messages lost.
func TestPostgresRestartAndOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs replicas of the bot binary")
	}
	storagetest.PostgresDSN(t) // skips, saying why, without PostgreSQL
	cluster, err := storagetest.StartCluster()
	if err != nil {
		t.Fatalf("starting a PostgreSQL of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the test's PostgreSQL: %v", err)
		}
	})
	outage := pgOutage(t)
	// Slack delivers an event it saw no acknowledgement of again, three
	// times (after 1 and 5 minutes, compressed here to every 4 s): input
	// refused during the outage comes back after it.
	e := newEnv(t, setup{pgBase: cluster.DSN, think: 300 * time.Millisecond,
		slack: []slackfake.Option{slackfake.WithRedelivery(4 * time.Second)}})
	proxy := netfault.New(t, netfault.HostPort(cluster.DSN))
	e.replicaDSN = proxy.URL(e.dsn)
	var ask asked
	ask.first = map[string]time.Time{}
	e.llm.Handle(ask.wrap(e.answer))

	rs := []*replica{e.addReplica(), e.addReplica()}
	for _, r := range rs {
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed^0xfa17))
	p := chaosPlan{threads: 16, followUps: 2, traffic: 12*time.Second + outage}
	threads, schedule := plan(p, rng)
	t.Logf("%d threads × 3 messages over %s; PostgreSQL restarted at 3 s, unreachable for %s from 7 s; seed %d",
		p.threads, p.traffic, outage, seed)

	start := time.Now()
	var (
		wg                              sync.WaitGroup
		faultErr                        error
		restartAt, restarted, restartOK time.Time
		outageAt, outageEnd, outageOK   time.Time
		notReady                        = map[int]string{}
		notReadyAfter                   time.Duration
	)
	wg.Go(func() {
		faultErr = func() error {
			wait := func(at time.Duration) error {
				select {
				case <-time.After(time.Until(start.Add(at))):
					return nil
				case <-e.ctx.Done():
					return e.ctx.Err()
				}
			}
			if err := wait(3 * time.Second); err != nil {
				return err
			}
			restartAt = time.Now()
			if err := cluster.Crash(); err != nil {
				return fmt.Errorf("stopping PostgreSQL: %w", err)
			}
			if err := cluster.Start(); err != nil {
				return fmt.Errorf("starting PostgreSQL again: %w", err)
			}
			restarted = time.Now()
			var err error
			if restartOK, err = e.allReady(rs, 2*time.Minute); err != nil {
				return fmt.Errorf("after the restart: %w", err)
			}
			if err := wait(7 * time.Second); err != nil {
				return err
			}
			outageAt = time.Now()
			proxy.Down()
			// Every replica says so while it lasts.
			err = e.poll("every replica not ready", outage, 20*time.Millisecond, func() (bool, error) {
				for _, r := range rs {
					if _, ok := notReady[r.n]; ok {
						continue
					}
					if code, body := r.readyz(); code == http.StatusServiceUnavailable && strings.Contains(body, "storage: not answering") {
						notReady[r.n] = body
					}
				}
				return len(notReady) == len(rs), nil
			})
			notReadyAfter = time.Since(outageAt)
			if err != nil {
				return fmt.Errorf("during the outage: %w (seen: %v)", err, notReady)
			}
			if err := wait(7*time.Second + outage); err != nil {
				return err
			}
			if err := proxy.Up(); err != nil {
				return err
			}
			outageEnd = time.Now()
			if outageOK, err = e.allReady(rs, 2*time.Minute); err != nil {
				return fmt.Errorf("after the outage: %w", err)
			}
			return nil
		}()
	})
	e.send(threads, schedule, rng)
	wg.Wait()
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	trafficDone := time.Now()

	var last *audit
	err = e.poll("every message answered", 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		last = e.audit(threads)
		return len(last.waiting) == last.repliesDropped, nil
	})
	for _, r := range rs {
		if xerr := r.unexpectedExit(); xerr != nil {
			t.Error(xerr)
		}
	}
	// Two gaps are known, and reported rather than failed on:
	//   - a write of a session's entries that still fails after the store's
	//     patience (storage unavailable longer than it) tells the thread "I
	//     couldn't save part of this conversation": that answer is in no
	//     session, and its run may be ended only by a takeover;
	//   - a reply Slack redelivers before the mention that started its
	//     thread (refused during the outage, redelivered later) is dropped
	//     (TestReplyBeforeItsThreadIsStored).
	unsaved := map[int]bool{}
	for _, th := range threads {
		if th.root != "" && e.botSays(th.channel, th.root, "couldn't save part of this conversation") {
			unsaved[th.n] = true
		}
	}
	var other []string
	unsavedProblems := 0
	for _, pr := range last.problems {
		var n int
		if _, serr := fmt.Sscanf(pr, "thread %d:", &n); serr == nil && unsaved[n] {
			unsavedProblems++
			continue
		}
		other = append(other, pr)
	}
	if err != nil {
		t.Errorf("%v\n%s", err, last)
	} else if len(other) > 0 {
		t.Errorf("problems besides the known gaps:\n  %s\n%s", strings.Join(other, "\n  "), last)
	}
	if t.Failed() {
		for i, th := range append(last.bad, last.stuck...) {
			if i == 6 {
				break
			}
			t.Log(e.explain(th))
		}
	}
	ds := ask.delays(threads)
	delayed := 0
	for _, d := range ds {
		if d > 2*time.Second {
			delayed++
		}
	}
	// Lost: accepted by no session (the audit, settled, waits for nothing
	// else). Asked: a dropped reply may still reach the model, in the
	// thread's context of a later run.
	lost := last.repliesDropped
	neverAsked := last.tokens - len(ds)
	t.Logf("known gaps: %d threads told part of their conversation was not saved (%d audit problems), %d replies dropped",
		len(unsaved), unsavedProblems, last.repliesDropped)
	t.Logf("restart: PostgreSQL down %s, replicas ready %s after it was back",
		restarted.Sub(restartAt).Round(time.Millisecond), restartOK.Sub(restarted).Round(time.Millisecond))
	t.Logf("outage of %s: every /readyz said storage not answering %s into it; ready again %s after it ended",
		outage, notReadyAfter.Round(time.Millisecond), outageOK.Sub(outageEnd).Round(time.Millisecond))
	if len(ds) > 0 {
		t.Logf("FIGURE pg: %d messages, %d delayed > 2 s (p50 %s, max %s from sent to the model), %d lost; settled %s after traffic; %s",
			last.tokens, delayed, ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), lost,
			time.Since(trafficDone).Round(time.Millisecond), last)
	}
	if neverAsked > last.repliesDropped {
		t.Errorf("%d messages never reached the model, %d of them dropped replies", neverAsked, last.repliesDropped)
	}
	var gaps []string
	if len(unsaved) > 0 {
		gaps = append(gaps, fmt.Sprintf("writes while PostgreSQL was away failed for good (%d threads told part of their conversation was not saved)", len(unsaved)))
	}
	if last.repliesDropped > 0 {
		gaps = append(gaps, fmt.Sprintf("a reply redelivered before its thread's mention is dropped (%d)", last.repliesDropped))
	}
	if !t.Failed() && len(gaps) > 0 {
		t.Skipf("blocked by: %s; every other check passed", strings.Join(gaps, "; "))
	}
}
