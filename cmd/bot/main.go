// Command bot runs threadsmith: a coding agent in Slack and Discord threads.
// Build it as threadsmith (go build -o threadsmith ./cmd/bot).
//
//	threadsmith -config config.yaml   run on every enabled platform
//	threadsmith -check                validate the config and reach every service, exit 0/1
//	threadsmith -console              one local thread in this terminal (-continue: the latest)
//	threadsmith -backup FILE          copy the SQLite database to FILE, while the bot runs or not
//	threadsmith -version              print the version
//
// Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), a passing -check
// or a written -backup; 1 on a runtime failure (another bot holds the
// data_dir, say), a failing -check or -backup; 2 on invalid flags or config. Under go run, go itself exits 1 for
// any failure (and prints "exit status N"): scripts should run the binary.
//
// In the console, Ctrl-C stops the run and a second Ctrl-C (or Ctrl-D)
// quits; SIGTERM quits.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	m := NewMain()
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if m.Version {
		fmt.Println(versionLine())
		return 0
	}
	var ctx context.Context
	var stop context.CancelFunc
	if m.Console {
		// Ctrl-C belongs to the console: it stops the run; the second quits.
		ctx, stop = signal.NotifyContext(context.Background(), syscall.SIGTERM)
		ctx, stop = consoleInterrupts(ctx, stop, m)
	} else {
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	}
	defer stop()

	if m.Backup != "" {
		if err := m.RunBackup(ctx, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if errors.As(err, new(configError)) {
				return 2
			}
			return 1
		}
		return 0
	}
	if m.Check {
		ok := m.RunCheck(ctx, os.Stdout)
		if !ok {
			return 1
		}
		return 0
	}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if errors.As(err, new(configError)) {
			return 2
		}
		return 1
	}
	why := "stopped by itself"
	select {
	case <-ctx.Done():
		why = context.Cause(ctx).Error() // "terminated signal received"
	case <-m.Done():
		if err := m.Err(); err != nil {
			why += ": " + err.Error()
		}
	}
	stop()
	err := m.CloseBecause(why)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := m.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// consoleInterrupts returns ctx ended also when m.Interrupt says a Ctrl-C
// should quit. After that, Ctrl-C does nothing: the shutdown is bounded.
func consoleInterrupts(ctx context.Context, stopSignals context.CancelFunc, m *Main) (context.Context, context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	go func() {
		for {
			select {
			case <-sigs:
				if m.Interrupt() {
					cancelCause(errors.New("interrupt signal received"))
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	// sigs stays registered: a Ctrl-C during the shutdown is caught and
	// dropped, so it cannot kill the bot before its runs (and the processes
	// they started) are stopped. Caught rather than ignored, so the programs
	// the bot starts meanwhile do not inherit an ignored SIGINT.
	return ctx, func() {
		cancel()
		stopSignals()
	}
}
