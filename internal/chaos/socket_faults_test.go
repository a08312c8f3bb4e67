package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
)

// TestSlackSocketCutsAndHalfOpen runs a replica whose Socket Mode
// connection goes through a TCP proxy while mentions and follow-ups
// arrive: the connection is cut every 2–4 s, then Slack's side is
// unreachable for 6 s (every reconnect refused), then the connection goes
// half-open (no data either way, no close) until slack-go notices the pings
// stopped. Every message must reach the model once and be answered once (the
// chaos audit: each event acknowledged once or delivered again), the
// reconnects while refused must back off, and the half-open connection must
// be replaced within slack-go's 30 s ping timeout. It logs the figures.
func TestSlackSocketCutsAndHalfOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bot binary")
	}
	e := newEnv(t, setup{think: 300 * time.Millisecond})
	proxy := netfault.New(t, netfault.HostPort(e.slack.URL()))
	e.slack.SetSocketAddr(proxy.Addr())
	var ask asked
	ask.first = map[string]time.Time{}
	e.llm.Handle(ask.wrap(e.answer))
	r := e.addReplica()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed^0x50c4))
	p := chaosPlan{threads: 12, followUps: 2, traffic: 30 * time.Second}
	threads, schedule := plan(p, rng)
	// Three more threads start while the connection is half-open: their
	// mentions wait for the new connection.
	frng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	held, heldSchedule := plan(chaosPlan{threads: 3, traffic: time.Second}, frng)
	for _, th := range held {
		th.n += 100
	}
	t.Logf("%d threads × 3 messages over %s; cuts every 2–4 s until 14 s, refused 14–20 s, half-open from 22 s (3 more threads start then); seed %d",
		p.threads, p.traffic, seed)

	start := time.Now()
	var (
		wg          sync.WaitGroup
		faultErr    error
		cuts        []time.Time
		reconnects  []time.Duration // from a cut to the next connection's hello
		refusedOpen int             // apps.connections.open calls while refused
		refusedFor  time.Duration
		recovered   time.Duration // from the end of the refusal to a connection
		halfOpenAt  time.Time
		replacedIn  time.Duration // from half-open to a new connection
	)
	hellos := func() int { return len(e.slack.Connections()) }
	waitHello := func(after int, d time.Duration) (time.Duration, error) {
		from := time.Now()
		err := e.poll("a new Socket Mode connection", d, 10*time.Millisecond, func() (bool, error) {
			return hellos() > after, nil
		})
		return time.Since(from), err
	}
	wg.Go(func() {
		faultErr = func() error {
			for time.Since(start) < 14*time.Second {
				select {
				case <-time.After(2*time.Second + time.Duration(frng.Int64N(int64(2*time.Second)))):
				case <-e.ctx.Done():
					return e.ctx.Err()
				}
				n := hellos()
				cuts = append(cuts, time.Now())
				if err := proxy.Cut(); err != nil {
					return err
				}
				d, err := waitHello(n, time.Minute)
				if err != nil {
					return err
				}
				reconnects = append(reconnects, d)
			}
			opens := len(e.slack.CallsTo("apps.connections.open"))
			n := hellos()
			proxy.Down()
			downAt := time.Now()
			select {
			case <-time.After(6 * time.Second):
			case <-e.ctx.Done():
				return e.ctx.Err()
			}
			if err := proxy.Up(); err != nil {
				return err
			}
			refusedFor = time.Since(downAt)
			refusedOpen = len(e.slack.CallsTo("apps.connections.open")) - opens
			d, err := waitHello(n, 2*time.Minute)
			if err != nil {
				return fmt.Errorf("after the refusal: %w", err)
			}
			recovered = d
			select {
			case <-time.After(time.Until(start.Add(22 * time.Second))):
			case <-e.ctx.Done():
				return e.ctx.Err()
			}
			n = hellos()
			halfOpenAt = time.Now()
			if err := proxy.HalfOpen(); err != nil {
				return err
			}
			e.send(held, heldSchedule, frng)
			// The held connection is closed by the client when its pings
			// stop: from then on new connections pass.
			last := n - 1
			err = e.poll("the half-open connection closed", 2*time.Minute, 10*time.Millisecond, func() (bool, error) {
				cs := e.slack.Connections()
				return cs[last].Closed, nil
			})
			proxy.Heal()
			if err != nil {
				return err
			}
			if _, err := waitHello(n, 2*time.Minute); err != nil {
				return fmt.Errorf("after the half-open connection: %w", err)
			}
			replacedIn = time.Since(halfOpenAt)
			return nil
		}()
	})
	e.send(threads, schedule, rng)
	wg.Wait()
	if faultErr != nil {
		t.Fatal(faultErr)
	}
	trafficDone := time.Now()
	threads = append(threads, held...)
	var last *audit
	err := e.poll("every message answered", 2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		last = e.audit(threads)
		return len(last.waiting) == 0, nil
	})
	if xerr := r.unexpectedExit(); xerr != nil {
		t.Error(xerr)
	}
	if err != nil {
		t.Errorf("%v\n%s", err, last)
	} else if !last.ok() {
		t.Errorf("%s", last)
	}
	if t.Failed() {
		for i, th := range append(last.bad, last.stuck...) {
			if i == 6 {
				break
			}
			t.Log(e.explain(th))
		}
	}
	// While every connection is refused, slack-go backs off: from 100 ms,
	// doubling, a few attempts in 6 s rather than one per event loop.
	if refusedOpen > 12 {
		t.Errorf("%d connection attempts in %s of refusal, want backing off (at most 12)", refusedOpen, refusedFor.Round(time.Millisecond))
	}
	// slack-go replaces a connection whose pings stopped for 30 s: it looks
	// every 30 s, so the last ping may be a little under 30 s old at one
	// look and be found stale at the next, up to 60 s after it.
	if replacedIn > 2*30*time.Second+15*time.Second {
		t.Errorf("the half-open connection was replaced after %s, want within two 30 s ping checks and a margin", replacedIn.Round(time.Millisecond))
	}
	retries := 0
	for _, d := range e.slack.Deliveries() {
		if d.RetryAttempt > 0 {
			retries++
		}
	}
	ds := ask.delays(threads)
	delayed := 0
	for _, d := range ds {
		if d > 2*time.Second {
			delayed++
		}
	}
	slices.Sort(reconnects)
	if len(reconnects) > 0 && len(ds) > 0 {
		t.Logf("FIGURE slack: %d cuts, reconnected p50 %s max %s; refused %s: %d connection attempts, connected %s after; half-open replaced after %s; "+
			"%d events delivered again; %d messages, %d delayed > 2 s (max %s), %d lost; settled %s after traffic; %s",
			len(cuts), reconnects[len(reconnects)/2].Round(time.Millisecond), reconnects[len(reconnects)-1].Round(time.Millisecond),
			refusedFor.Round(time.Millisecond), refusedOpen, recovered.Round(time.Millisecond), replacedIn.Round(time.Millisecond),
			retries, last.tokens, delayed, ds[len(ds)-1].Round(time.Millisecond), last.tokens-len(ds),
			time.Since(trafficDone).Round(time.Millisecond), last)
	}
	if lost := last.tokens - len(ds); lost != 0 {
		t.Errorf("%d messages never reached the model", lost)
	}
}
