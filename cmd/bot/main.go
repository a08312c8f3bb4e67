// Command bot runs threadsmith: a coding agent in Slack and Discord threads.
//
//	bot -config config.yaml      run on every enabled platform
//	bot -check                   validate the config and reach every service, exit 0/1
//	bot -console                 one local thread in this terminal
//
// Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM) or a passing -check;
// 1 on a runtime failure or a failing -check; 2 on invalid flags or config.
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

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
	select {
	case <-ctx.Done():
	case <-m.Done():
	}
	stop()
	err := m.Close()
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
