package web

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"html/template"
	"net/http"
	"strings"
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

// renderPieces renders p's header and each item of its timeline.
func (s *Server) renderPieces(p *page) ([]rendered, error) {
	out := make([]rendered, 0, len(p.Items)+1)
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, "head", p); err != nil {
		return nil, err
	}
	out = append(out, rendered{ID: "head", HTML: template.HTML(s.redactor.Replace(b.String()))})
	for _, it := range p.Items {
		b.Reset()
		if err := s.tmpl.ExecuteTemplate(&b, "item", it); err != nil {
			return nil, err
		}
		out = append(out, rendered{ID: it.Key, HTML: template.HTML(s.redactor.Replace(b.String()))})
	}
	return out, nil
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
