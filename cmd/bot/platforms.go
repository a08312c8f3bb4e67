package main

import (
	"log/slog"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
)

// buildPlatformAdapters returns the adapters of the enabled platforms.
func buildPlatformAdapters(cfg *config.Config, log *slog.Logger) ([]chat.Adapter, error) {
	var out []chat.Adapter
	_ = cfg
	_ = log
	return out, nil
}
