package main

import (
	"fmt"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/schedule"
)

// schedules maps the configured schedules that are not disabled onto the
// schedule package's (the config was validated: a problem here is the
// config's). The console runs none: it cannot open threads.
func schedules(cfg *config.Config, console bool) ([]*schedule.Schedule, error) {
	if console {
		return nil, nil
	}
	var out []*schedule.Schedule
	for i, s := range cfg.Schedules {
		if s.Disabled {
			continue
		}
		platform, channel := cfg.PlatformChannel(s)
		sc, err := schedule.Parse(schedule.Spec{
			Name: s.Name, Cron: s.Cron, Timezone: s.Timezone,
			Platform: platform, Channel: channel, Repo: s.Repo,
			Prompt: s.Prompt, Keep: s.Thread == "keep",
		})
		if err != nil {
			return nil, configError{fmt.Errorf("schedules[%d]: %w", i, err)}
		}
		out = append(out, sc)
	}
	return out, nil
}
