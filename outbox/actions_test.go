package outbox_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

func withActions(cs []call) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s:%s%v", c.Kind, c.Text, c.Actions)
	}
	return out
}

var stop = []chat.Action{{ID: "stop", Label: "Stop", Danger: true}}

func TestActionsFollowThePostAndRideEveryLaterEdit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{})
		th := ref("C1", "t")
		m := o.Post(th, "working", outbox.High, nil)
		o.SetActions(m, stop, outbox.High) // before the post went out
		flush(t, o)
		// The edit that carries them is part of the post: Flush waited for it.
		if got := withActions(r.accepted("actions", nil)); !slices.Equal(got, []string{"actions:working[stop]"}) {
			t.Fatalf("after the first Flush: %q, want the buttons' edit", got)
		}
		o.Edit(m, "working: read", outbox.Normal)
		flush(t, o)
		o.EditFinal(m, "done", outbox.Normal)
		o.SetActions(m, nil, outbox.Normal) // merges into the final edit
		flush(t, o)
		o.EditFinal(m, "done", outbox.Normal) // shown already, buttons too: no call
		flush(t, o)

		// The final edit and the buttons' removal go out as one call when
		// SetActions comes before the worker takes the edit, else as two;
		// which one depends on scheduling (goroutines in a bubble still run
		// in parallel), the end is the same.
		want := []string{"post:working[]", "actions:working[stop]", "actions:working: read[stop]", "actions:done[]"}
		split := []string{"post:working[]", "actions:working[stop]", "actions:working: read[stop]", "actions:done[stop]", "actions:done[]"}
		if got := withActions(r.accepted("", nil)); !slices.Equal(got, want) && !slices.Equal(got, split) {
			t.Errorf("calls:\n got %q\nwant %q (or the final edit and the removal apart: %q)", got, want, split)
		}
	})
}

func TestActionsAloneEditWithTheLatestText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.Limits{EditPerMessage: outbox.Rate{Every: time.Second, Burst: 1}}})
		th := ref("C1", "t")
		m := o.Post(th, "v1", outbox.High, nil)
		flush(t, o)
		o.Edit(m, "v2", outbox.Normal)
		flush(t, o)
		o.SetActions(m, []chat.Action{{ID: "diff", Label: "Diff"}}, outbox.Normal)
		flush(t, o)
		want := []string{"post:v1[]", "edit:v2[]", "actions:v2[diff]"}
		if got := withActions(r.accepted("", nil)); !slices.Equal(got, want) {
			t.Errorf("calls:\n got %q\nwant %q", got, want)
		}
		// An adopted message's text is unknown: its buttons cannot be set
		// without blanking it.
		a := o.Adopt(th, "old")
		o.SetActions(a, stop, outbox.Normal)
		flush(t, o)
		if got := r.accepted("actions", func(c call) bool { return c.ID == "old" }); len(got) != 0 {
			t.Errorf("adopted message got %v, want no call", got)
		}
	})
}

func TestActionsWithoutActionerAreDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, plainAdapter{r}, outbox.Config{})
		m := o.Post(ref("C1", "t"), "x", outbox.High, nil)
		o.SetActions(m, stop, outbox.High)
		flush(t, o)
		if got, want := withActions(r.accepted("", nil)), []string{"post:x[]"}; !slices.Equal(got, want) {
			t.Errorf("calls: got %q, want %q", got, want)
		}
	})
}
