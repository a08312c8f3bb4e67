package chatfake_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
)

// handler is a chat.Handler told apart by its name.
type handler struct {
	chat.Handler
	name string
}

// run starts a Run of a with h and returns the function that ends it and
// waits for it to return.
func run(t *testing.T, a *chatfake.Adapter, h chat.Handler) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func handlerNow(t *testing.T, a *chatfake.Adapter) (chat.Handler, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	return a.Handler(ctx)
}

// Handler serves the running bot's handler: it waits for a Run, stops
// serving one that ended, and a Run started before the previous one ended
// (a restart) replaces it rather than failing.
func TestHandlerFollowsTheRunningBot(t *testing.T) {
	a := chatfake.New("fake", 100)
	if _, err := handlerNow(t, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handler before any Run = %v, want it to wait", err)
	}
	// waitFor waits until Handler serves want: a Run just started may not
	// have put its handler in place yet.
	waitFor := func(want string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			h, err := a.Handler(ctx)
			if err != nil {
				t.Fatalf("Handler = %v, want %s", err, want)
			}
			if h.(*handler).name == want {
				return
			}
			runtime.Gosched()
		}
	}
	stop1 := run(t, a, &handler{name: "first"})
	waitFor("first")
	stop1()
	if _, err := handlerNow(t, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handler after the Run ended = %v, want it to wait for the next Run", err)
	}

	stop2 := run(t, a, &handler{name: "second"})
	waitFor("second")
	stop3 := run(t, a, &handler{name: "third"}) // before the second ended
	waitFor("third")
	stop2()
	waitFor("third") // the old Run ending does not take the new one's place
	stop3()
	if _, err := handlerNow(t, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Handler after every Run ended = %v, want it to wait", err)
	}
}
