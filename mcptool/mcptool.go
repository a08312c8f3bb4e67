// Package mcptool offers the tools of Model Context Protocol servers to a
// session as agent tools, named <server>__<tool>.
//
// Contract:
//   - Open connects to every server of a session (in parallel) and lists its
//     tools; a server that cannot start is recorded (Status) and its tools are
//     missing, the others work. Stdio servers are started by the caller's
//     Launch (the bot runs them in the thread's sandbox through Start, where
//     nothing the agent wrote can become their code); Streamable HTTP
//     servers are reached from the bot with the configured headers.
//   - A call runs with the run's context (so !stop cancels it, and the server
//     is told) and the server's timeout. Results keep to the built-in tools'
//     limits (text cut to 2000 lines or 50 KB, images passed on as images).
//   - A server whose connection dies is started again once, and the call
//     retried; after a second death (or a failed restart) its tools answer
//     with an error that says so, for the rest of the session, and
//     Options.OnDown is called once so the caller can tell the thread.
//   - When a server says its tool list changed, the list is read again and
//     Options.OnChange is called, from a goroutine of the SDK; the caller
//     hands the new Tools to its session.
//   - Close stops every server. Nothing of a server's environment or headers
//     (which may hold secrets) is logged or shown to the model.
package mcptool

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/sandbox"
)

// Server is one MCP server a session uses.
type Server struct {
	// Name prefixes its tools.
	Name string
	// Command, Args, Env and Network describe a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	Network bool
	// URL and Headers describe a Streamable HTTP server.
	URL     string
	Headers map[string]string
	// Tools is an allow-list of tool names; empty: all.
	Tools []string
	// Timeout bounds one call. Default DefaultTimeout.
	Timeout time.Duration
	// FromRepo marks a server the repository declared (shown in Status).
	FromRepo bool
}

// DefaultTimeout bounds a call when Server.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// Process is a started stdio server: its standard output (what it says) and
// input (what it is told), and how to stop it.
type Process struct {
	Stdout io.ReadCloser
	Stdin  io.WriteCloser
	// Stop kills the server and everything it started; it may be called more
	// than once.
	Stop func()
}

// Launch starts a stdio server.
type Launch func(ctx context.Context, s Server) (*Process, error)

// Options configures a Set.
type Options struct {
	// Launch starts stdio servers; without it they fail to start.
	Launch Launch
	// ConnectTimeout bounds a server's start at Open: connecting and listing
	// its tools (the session waits for it). Default DefaultConnectTimeout;
	// a call's Server.Timeout does not lengthen it.
	ConnectTimeout time.Duration
	// Secrets are hidden from the errors a Set reports and logs: a
	// server's error may name its URL, and a key in it.
	Secrets []string
	// HTTPClient reaches URL servers. Default http.DefaultClient's transport
	// with no overall timeout (streams are long-lived; calls have their own).
	HTTPClient *http.Client
	// OnChange is called after a server's tool list changed.
	OnChange func()
	// OnDown is called once when a server is given up (it died again, or
	// could not be started again), with its name and why; from the goroutine
	// of the call that found it dead.
	OnDown func(server string, err error)
	Logger *slog.Logger
}

// Set is the MCP servers of one session. It is safe for concurrent use.
type Set struct {
	opts  Options
	conns []*conn
}

// Status is how a server is doing, for !tools and -check.
type Status struct {
	Server   string
	FromRepo bool
	// Tools are the model's names of its tools.
	Tools []string
	// Err says why the server has no tools, or "".
	Err string
	// Unoffered are names of its allow-list (Server.Tools) the server does
	// not offer: a typo, or a tool it dropped.
	Unoffered []string
}

// Open starts the servers and lists their tools. It returns when every
// server has answered or failed (each within ctx and ConnectTimeout).
func Open(ctx context.Context, servers []Server, opts Options) *Set {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{}
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	s := &Set{opts: opts}
	var wg sync.WaitGroup
	for _, srv := range servers {
		if srv.Timeout <= 0 {
			srv.Timeout = DefaultTimeout
		}
		c := &conn{srv: srv, set: s, log: opts.Logger.With("mcp_server", srv.Name)}
		s.conns = append(s.conns, c)
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
			defer cancel()
			c.mu.Lock()
			defer c.mu.Unlock()
			if err := c.connectLocked(cctx); err != nil {
				c.err = s.hide(err)
				c.log.Warn("mcp server did not start", "err", c.err)
			}
		})
	}
	wg.Wait()
	return s
}

// Tools returns the tools of every working server, in server order, each
// name once: tools whose names become the same once made safe ("a.b" and
// "a_b", or server "x" tool "y__z" and server "x__y" tool "z") would make
// every request fail, as providers refuse a tool name given twice. A tool
// whose name needed no change wins, else the first.
func (s *Set) Tools() []agent.Tool {
	var out []agent.Tool
	at := map[string]int{}
	for _, c := range s.conns {
		c.mu.Lock()
		for _, t := range c.tools {
			name := t.Spec().Name
			i, taken := at[name]
			switch {
			case !taken:
				at[name] = len(out)
				out = append(out, t)
			case exactName(t) && !exactName(out[i]):
				out[i] = t
			}
		}
		c.mu.Unlock()
	}
	return out
}

// exactName reports whether t's name is its server's name and its own,
// unchanged.
func exactName(t agent.Tool) bool {
	tl, ok := t.(*tool)
	return ok && tl.spec.Name == tl.c.srv.Name+"__"+tl.remote
}

// hide redacts Options.Secrets from err.
func (s *Set) hide(err error) error {
	if err == nil || len(s.opts.Secrets) == 0 {
		return err
	}
	if r := tools.RedactString(err.Error(), s.opts.Secrets); r != err.Error() {
		return errors.New(r)
	}
	return err
}

// Status reports every server.
func (s *Set) Status() []Status {
	var out []Status
	for _, c := range s.conns {
		c.mu.Lock()
		st := Status{Server: c.srv.Name, FromRepo: c.srv.FromRepo}
		for _, t := range c.tools {
			st.Tools = append(st.Tools, t.Spec().Name)
		}
		if c.err != nil {
			st.Err = c.err.Error()
		} else {
			st.Unoffered = c.unoffered
		}
		c.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close stops every server.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.conns {
		c.mu.Lock()
		c.closed = true
		errs = append(errs, c.disconnectLocked())
		c.mu.Unlock()
	}
	return errors.Join(errs...)
}

// conn is one server's connection. mu serialises (re)connecting; calls
// themselves run concurrently on the session they read under mu.
type conn struct {
	srv Server
	set *Set
	log *slog.Logger

	mu        sync.Mutex
	session   *mcp.ClientSession
	stop      func()
	tools     []agent.Tool
	err       error    // why the server is unusable, or nil
	unoffered []string // allow-listed names the server does not offer
	restarts  int
	closed    bool
}

// DefaultConnectTimeout bounds a server's start (connect and list its
// tools) when Options.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// maxRestarts is how often a crashed server is started again per session.
const maxRestarts = 1

func (c *conn) connectLocked(ctx context.Context) error {
	var transport mcp.Transport
	switch {
	case c.srv.URL != "":
		hc := *c.set.opts.HTTPClient
		hc.Transport = headerTransport{base: hc.Transport, headers: c.srv.Headers}
		transport = &mcp.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: &hc, MaxRetries: 2}
	case c.set.opts.Launch == nil:
		return errors.New("stdio servers cannot be started here")
	default:
		p, err := c.set.opts.Launch(ctx, c.srv)
		if err != nil {
			return fmt.Errorf("starting %s: %w", c.srv.Command, err)
		}
		c.stop = p.Stop
		transport = &mcp.IOTransport{Reader: p.Stdout, Writer: p.Stdin}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "threadsmith", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go c.refresh() },
	})
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		c.disconnectLocked()
		return fmt.Errorf("connecting: %w", err)
	}
	c.session = session
	tools, err := c.listLocked(ctx)
	if err != nil {
		c.disconnectLocked()
		return fmt.Errorf("listing its tools: %w", err)
	}
	c.tools, c.err = tools, nil
	c.log.Info("mcp server ready", "tools", len(tools))
	return nil
}

// closeTimeout bounds a session's goodbye: a Streamable HTTP server may keep
// its DELETE waiting for a call it was never told to cancel.
const closeTimeout = 5 * time.Second

func (c *conn) disconnectLocked() error {
	var err error
	if c.stop != nil {
		// A stdio server is killed first: its session then ends at once.
		c.stop()
		c.stop = nil
	}
	if c.session != nil {
		done := make(chan error, 1)
		go func(s *mcp.ClientSession) { done <- s.Close() }(c.session)
		c.session = nil
		select {
		case err = <-done:
		case <-time.After(closeTimeout):
			err = errors.New("the server did not answer the end of the session")
		}
	}
	return err
}

// listLocked reads the server's tools, keeping the allowed ones (and noting
// the allowed ones it lacks).
func (c *conn) listLocked(ctx context.Context) ([]agent.Tool, error) {
	var out []agent.Tool
	var offered []string
	for t, err := range c.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		offered = append(offered, t.Name)
		if len(c.srv.Tools) > 0 && !slices.Contains(c.srv.Tools, t.Name) {
			continue
		}
		tl, err := newTool(c, t)
		if err != nil {
			c.log.Warn("mcp tool left out", "tool", t.Name, "err", err)
			continue
		}
		out = append(out, tl)
	}
	c.unoffered = nil
	for _, n := range c.srv.Tools {
		if !slices.Contains(offered, n) {
			c.unoffered = append(c.unoffered, n)
		}
	}
	return out, nil
}

// refresh reads the tool list again after the server said it changed.
func (c *conn) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), c.srv.Timeout)
	defer cancel()
	c.mu.Lock()
	if c.session == nil || c.closed {
		c.mu.Unlock()
		return
	}
	tools, err := c.listLocked(ctx)
	if err == nil {
		c.tools = tools
	}
	c.mu.Unlock()
	if err != nil {
		c.log.Warn("mcp server's new tool list could not be read", "err", c.set.hide(err))
		return
	}
	if f := c.set.opts.OnChange; f != nil {
		f()
	}
}

// call calls one tool, starting the server again once if it died.
func (c *conn) call(ctx context.Context, name string, args any) (*mcp.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		session, err := c.session, c.err
		c.mu.Unlock()
		if session == nil {
			if err == nil {
				err = errors.New("not connected")
			}
			return nil, err
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil || ctx.Err() != nil || !connectionLost(err) {
			return res, err
		}
		// Dead: started again once per session; dying again gives it up
		// (restart says so) instead of leaving a dead session for the next
		// call to find.
		if rerr := c.restart(ctx, session); rerr != nil {
			return nil, rerr
		}
		if attempt > 0 {
			return nil, err
		}
	}
}

// connectionLost tells a dead server (its process exited, its stream ended)
// from an error it answered with.
func connectionLost(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

// restart replaces a dead session (unless another call already did), and
// tells Options.OnDown when it gives the server up. That happens once: a
// failed restart leaves no session, so no later call gets here with one.
func (c *conn) restart(ctx context.Context, dead *mcp.ClientSession) error {
	c.mu.Lock()
	err := c.restartLocked(ctx, dead)
	down := err != nil && !c.closed
	c.mu.Unlock()
	if down && c.set.opts.OnDown != nil {
		c.set.opts.OnDown(c.srv.Name, err)
	}
	return err
}

func (c *conn) restartLocked(ctx context.Context, dead *mcp.ClientSession) error {
	if c.session != dead {
		return nil // someone else restarted it
	}
	c.disconnectLocked()
	if c.closed {
		return errors.New("the session is closing")
	}
	if c.restarts >= maxRestarts {
		c.err = fmt.Errorf("the server stopped working (it died %d times); its tools are unavailable in this session", c.restarts+1)
		c.log.Warn("mcp server died again; giving up", "restarts", c.restarts)
		return c.err
	}
	c.restarts++
	c.log.Warn("mcp server died; starting it again")
	if err := c.connectLocked(ctx); err != nil {
		c.err = c.set.hide(fmt.Errorf("the server died and could not be started again: %w", err))
		return c.err
	}
	return nil
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(h.headers) == 0 {
		return base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return base.RoundTrip(r)
}

// toolNameRE is what providers accept as a tool name.
var toolNameRE = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// ToolName is the model's name of a server's tool: <server>__<tool>, with
// characters providers refuse replaced and cut to 64.
func ToolName(server, tool string) string {
	n := server + "__" + toolNameRE.ReplaceAllString(tool, "_")
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// StartInSandbox starts a stdio server as sp describes it (Path, Args,
// Env, Dir, Mounts) in sb, wired to the MCP client: its stdin and stdout
// become the Process's, its stderr lines go to stderr (nil: dropped).
func StartInSandbox(sb *sandbox.Sandbox, sp sandbox.Spec, stderr func(line string)) (*Process, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	sp.Stdin, sp.Stdout, sp.Stderr = inR, outW, errW
	p, err := sb.Start(sp)
	// The child has its ends; the bot keeps only its own.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			if stderr != nil {
				stderr(sc.Text())
			}
		}
		errR.Close()
	}()
	go func() { _, _ = p.Wait() }()
	return &Process{Stdout: outR, Stdin: inW, Stop: p.Kill}, nil
}
