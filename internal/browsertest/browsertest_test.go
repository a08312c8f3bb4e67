package browsertest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// Navigate returns on its own page's load, not on that of a page a click
// loaded before, whose event may still be waiting to be read: a DevTools
// peer sends that stale load, then the navigation's answer and its load.
// Navigate must use up both, or the next one returns before its page has
// loaded.
func TestNavigateWaitsForItsOwnLoad(t *testing.T) {
	load := func(loader string) []map[string]any {
		return []map[string]any{
			{"method": "Page.loadEventFired", "params": map[string]any{"timestamp": 1}},
			{"method": "Page.lifecycleEvent", "params": map[string]any{"frameId": "F", "loaderId": loader, "name": "load", "timestamp": 1}},
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			var cmd struct {
				ID     int
				Method string
			}
			if c.ReadJSON(&cmd) != nil {
				return
			}
			var out []map[string]any
			switch cmd.Method {
			case "Page.navigate":
				out = append(load("clicked"), map[string]any{"id": cmd.ID, "result": map[string]any{"frameId": "F", "loaderId": "asked"}})
				out = append(out, load("asked")...)
			default:
				out = []map[string]any{{"id": cmd.ID, "result": map[string]any{"result": map[string]any{"value": true}}}}
			}
			for _, m := range out {
				if c.WriteJSON(m) != nil {
					return
				}
			}
		}
	}))
	defer srv.Close()
	conn, _, err := websocket.DefaultDialer.DialContext(t.Context(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := &Browser{tb: t, ctx: ctx, conn: conn, replies: make(chan message, 16), loads: make(chan string, 16)}
	go b.read()
	b.Navigate("http://pages.test/")
	b.Eval("true") // its answer comes after every event before it
	if n := len(b.loads); n != 0 {
		t.Errorf("%d load events left after Navigate: the next one would return on them", n)
	}
}
