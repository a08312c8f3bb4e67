package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is one condition of readiness: storage answers, a platform is
// connected. Ready returns nil when the condition holds, else why not.
type Check struct {
	Name  string
	Ready func(ctx context.Context) error
}

// checkTimeout bounds one readiness check: a probe that hangs is a failure.
const checkTimeout = 2 * time.Second

// Handler serves the operator's endpoints:
//
//   - GET /healthz: 200 "ok" while the process runs (a liveness probe: it
//     depends on nothing, so a slow platform never gets the bot restarted);
//   - GET /readyz: 200 when every check passes, else 503; the body has one
//     line per check ("slack: ok", "discord: not connected");
//   - GET /metrics: the Prometheus text exposition of m.
//
// Any other path goes to fallback (the Slack Events API when both share a
// port), or is 404 without one.
func Handler(m *Metrics, checks []Check, fallback http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ok, report := ready(r.Context(), checks)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, report)
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		// A failed queue-depth read leaves that series out, not the scrape.
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	}))
	if fallback != nil {
		mux.Handle("/", fallback)
	}
	return mux
}

// ready runs the checks concurrently and reports whether all passed, with
// one line per check in the order given.
func ready(ctx context.Context, checks []Check) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() { errs[i] = c.Ready(ctx) })
	}
	wg.Wait()
	ok := true
	var b strings.Builder
	for i, c := range checks {
		if errs[i] != nil {
			ok = false
			fmt.Fprintf(&b, "%s: %v\n", c.Name, errs[i])
		} else {
			fmt.Fprintf(&b, "%s: ok\n", c.Name)
		}
	}
	return ok, b.String()
}

// shutdownTimeout bounds the wait for requests in flight when Serve stops.
const shutdownTimeout = 5 * time.Second

// Serve answers h on ln until ctx ends, then shuts the server down (requests
// in flight get a few seconds) and returns nil; it returns an error only if
// serving failed.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("http.listen: serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-served
	return nil
}

// Pipe is a net.Listener whose connections are dialled from this process.
// Given to a server of the bot's own (the Slack Events API) as its listener,
// it puts that server behind Handler's fallback on one shared port, through
// Proxy: PaaS hosts give an app one port, and a load balancer's health check
// goes to that port.
type Pipe struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewPipe returns an open Pipe.
func NewPipe() *Pipe { return &Pipe{conns: make(chan net.Conn), done: make(chan struct{})} }

var errPipeClosed = errors.New("ops: pipe closed")

// Accept implements net.Listener.
func (p *Pipe) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (p *Pipe) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

// Addr implements net.Listener.
func (p *Pipe) Addr() net.Addr { return pipeAddr{} }

// DialContext connects to the server accepting on p.
func (p *Pipe) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, errPipeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Proxy forwards requests to the server accepting on p, as they came: the
// path, the headers (Slack's signature among them) and the body unchanged.
func (p *Pipe) Proxy() http.Handler {
	target := &url.URL{Scheme: "http", Host: "pipe"}
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		Transport: &http.Transport{DialContext: p.DialContext, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute},
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "in-process" }
