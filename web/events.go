package web

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"html/template"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"
)

// heartbeatEvery keeps an idle event stream open through proxies that close
// quiet connections.
const heartbeatEvery = 25 * time.Second

// rendered is one piece of a page that the live follow sends on its own.
type rendered struct {
	ID   string        `json:"id"`
	HTML template.HTML `json:"html"`
}

// renderPieces renders p's header and each item of its timeline. An item
// rendered before with exactly the same content is taken from the cache:
// a live page is rebuilt at every change of its thread, and all but a few
// of its items are as they were (render is most of a rebuild's cost).
func (s *Server) renderPieces(p *page) ([]rendered, error) {
	out := make([]rendered, 0, len(p.Items)+1)
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, "head", p); err != nil {
		return nil, err
	}
	out = append(out, rendered{ID: "head", HTML: template.HTML(s.redactor.Replace(b.String()))})
	for _, it := range p.Items {
		key := pieceKey{thread: p.ThreadID, sum: it.fingerprint(s.pieces.seed)}
		if h, ok := s.pieces.get(key); ok {
			out = append(out, rendered{ID: it.Key, HTML: h})
			continue
		}
		b.Reset()
		if err := s.tmpl.ExecuteTemplate(&b, "item", it); err != nil {
			return nil, err
		}
		h := template.HTML(s.redactor.Replace(b.String()))
		s.pieces.put(key, h)
		out = append(out, rendered{ID: it.Key, HTML: h})
	}
	return out, nil
}

// pieceCache keeps rendered items by their content (item.fingerprint),
// bounded in bytes: when full it is emptied and refilled on demand.
type pieceCache struct {
	seed  maphash.Seed
	mu    sync.Mutex
	m     map[pieceKey]template.HTML
	bytes int
}

type pieceKey struct {
	thread int64
	sum    uint64
}

const maxCachedPieceBytes = 64 << 20

func (c *pieceCache) get(k pieceKey) (template.HTML, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[k]
	return h, ok
}

func (c *pieceCache) put(k pieceKey, h template.HTML) {
	if len(h) > maxCachedPieceBytes/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(h) > maxCachedPieceBytes {
		c.m, c.bytes = map[pieceKey]template.HTML{}, 0
	}
	if _, ok := c.m[k]; !ok {
		c.m[k] = h
		c.bytes += len(h)
	}
}

// fingerprint hashes everything the item template reads of it: two items
// with the same fingerprint render the same. TestFingerprintCoversEveryField
// fails when a field is added and not hashed here.
func (it *item) fingerprint(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	str := func(ss ...string) {
		for _, s := range ss {
			num(int64(len(s)), &h)
			h.WriteString(s)
		}
	}
	str(it.Key, it.Kind, it.Author, it.Text, string(it.HTML), it.Tool, it.Args, it.Output, it.OutputURL, it.FullURL,
		it.Reason, it.SHA, it.Result, it.Detail, it.Link, it.DiffURL)
	num(it.At.UnixNano(), &h)
	num(int64(it.Cut), &h)
	num(int64(it.FullLines), &h)
	num(int64(it.FullBytes), &h)
	num(int64(it.TokensBefore), &h)
	num(bits(it.IsError, it.Pending, it.Run != nil), &h)
	num(int64(len(it.Files)), &h)
	str(it.Files...)
	num(int64(len(it.Diff)), &h)
	for _, d := range it.Diff {
		str(d.Class, d.Text)
	}
	if r := it.Run; r != nil {
		for _, n := range []int64{int64(r.N), r.Started.UnixNano(), r.Ended.UnixNano(), r.Input, r.Output, r.Cache, r.CacheRead, r.CacheWrite,
			int64(math.Float64bits(r.Cost)), int64(r.Replies), int64(r.ToolCalls), int64(r.Errors), int64(len(r.Models))} {
			num(n, &h)
		}
		str(r.Outcome)
		str(r.Models...)
	}
	return h.Sum64()
}

func num(n int64, h *maphash.Hash) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	h.Write(b[:])
}

func bits(bs ...bool) int64 {
	var n int64
	for i, b := range bs {
		if b {
			n |= 1 << i
		}
	}
	return n
}

func digest(h template.HTML) uint64 {
	f := fnv.New64a()
	f.Write([]byte(h))
	return f.Sum64()
}

// events streams the changes of a thread's page as server-sent events: each
// "item" event is a JSON rendered piece to put in place of the element with
// its id, or to append to the timeline.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, token, ok := s.thread(w, r)
	if !ok {
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	seen := map[string]uint64{}
	version := r.URL.Query().Get("v")
	// What the page showed: the current pieces if its version is current;
	// otherwise nothing, and every piece is (re)sent below.
	if cur, err := s.opts.Store.ThreadVersion(ctx, id); err == nil && version != "" && cur == version {
		if p, err := s.build(ctx, id, token); err == nil && p.Version == version {
			pieces, err := s.renderPieces(p)
			if err == nil {
				for _, pc := range pieces {
					seen[pc.ID] = digest(pc.HTML)
				}
			}
		} else {
			version = ""
		}
	} else {
		version = ""
	}

	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n\n")
	flusher.Flush()

	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	lastWrite := time.Now()
	for {
		if err := s.sendChanges(ctx, w, id, token, &version, seen); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("following a session page", "thread", id, "err", err)
			}
			return
		}
		flusher.Flush()
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.Sub(lastWrite) >= heartbeatEvery {
				fmt.Fprint(w, ": still here\n\n")
				lastWrite = now
			}
		}
	}
}

// sendChanges writes the pieces that changed since *version.
func (s *Server) sendChanges(ctx context.Context, w http.ResponseWriter, id int64, token string, version *string, seen map[string]uint64) error {
	cur, err := s.opts.Store.ThreadVersion(ctx, id)
	if err != nil {
		return err
	}
	if cur == *version {
		return nil
	}
	p, err := s.build(ctx, id, token)
	if err != nil {
		return err
	}
	pieces, err := s.renderPieces(p)
	if err != nil {
		return err
	}
	for _, pc := range pieces {
		d := digest(pc.HTML)
		if old, ok := seen[pc.ID]; ok && old == d {
			continue
		}
		seen[pc.ID] = d
		data, err := json.Marshal(pc)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: item\ndata: %s\n\n", data); err != nil {
			return err
		}
	}
	// An inconsistent read has no version (""): the next poll reads again.
	*version = p.Version
	return nil
}
