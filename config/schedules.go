package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a request the bot makes on a calendar: each firing opens a
// thread in Channel (or continues the schedule's own, Thread: keep) whose
// first request is Prompt.
type Schedule struct {
	// Name names the schedule: its threads' title (⏰ name) and origin.
	Name string `yaml:"name"`
	// Cron is a standard five-field expression (minute hour day-of-month
	// month day-of-week) or a descriptor such as @daily; @every is refused.
	Cron string `yaml:"cron"`
	// Timezone is the IANA zone Cron is read in; "" is UTC.
	Timezone string `yaml:"timezone"`
	// Repo is the repository its threads work on; "" takes the channel's.
	Repo string `yaml:"repo"`
	// Channel is where its threads open: a channel id, prefixed with its
	// platform ("slack:C0123", "discord:1234") when both are enabled.
	Channel string `yaml:"channel"`
	// Prompt is each firing's request.
	Prompt string `yaml:"prompt"`
	// Thread is "new" (the default: a thread per firing) or "keep" (every
	// firing continues the schedule's own thread).
	Thread string `yaml:"thread"`
	// Disabled keeps the entry (checked) without firing it.
	Disabled bool `yaml:"disabled"`
}

// PlatformChannel splits Channel into its platform and channel id; a
// channel without a prefix is on the only enabled platform ("" when both
// are).
func (c *Config) PlatformChannel(s Schedule) (platform, channel string) {
	if p, ch, ok := strings.Cut(s.Channel, ":"); ok && (p == PlatformSlack || p == PlatformDiscord) {
		return p, ch
	}
	if ps := c.Platforms(); len(ps) == 1 {
		return ps[0], s.Channel
	}
	return "", s.Channel
}

var scheduleName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// cronParser reads the expressions the schedule package runs.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// cronProblem says what is wrong with a schedule's expression and zone.
func cronProblem(expr, timezone string) (key, problem string) {
	if timezone != "" {
		if _, err := time.LoadLocation(timezone); err != nil {
			return "timezone", fmt.Sprintf("unknown time zone %q (use an IANA name such as Europe/Paris)", timezone)
		}
	}
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return "cron", "must not be empty: five fields, minute hour day-of-month month day-of-week (such as 0 9 * * 1-5)"
	case strings.HasPrefix(expr, "@every"):
		return "cron", fmt.Sprintf("%q: @every is not a calendar schedule; use five fields", expr)
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return "cron", fmt.Sprintf("%q: give the time zone as timezone", expr)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return "cron", fmt.Sprintf("%q: %v", expr, err)
	}
	if s.Next(time.Now()).IsZero() {
		return "cron", fmt.Sprintf("%q never fires", expr)
	}
	return "", ""
}

func (c *Config) validateSchedules(v *collector) {
	seen := map[string]bool{}
	for i, s := range c.Schedules {
		key := fmt.Sprintf("schedules[%d].", i)
		switch {
		case s.Name == "":
			v.add(key+"name", "must not be empty")
		case !scheduleName.MatchString(s.Name):
			v.add(key+"name", fmt.Sprintf("%q: use letters, digits, '.', '_' and '-' only", s.Name))
		case seen[s.Name]:
			v.add(key+"name", fmt.Sprintf("%q is used by two schedules", s.Name))
		}
		seen[s.Name] = true
		if k, p := cronProblem(s.Cron, s.Timezone); p != "" {
			v.add(key+k, p)
		}
		if strings.TrimSpace(s.Prompt) == "" {
			v.add(key+"prompt", "must not be empty: it is each firing's request")
		}
		switch s.Thread {
		case "", "new", "keep":
		default:
			v.add(key+"thread", fmt.Sprintf("%q: use new (a thread per firing) or keep (the schedule's own thread)", s.Thread))
		}
		if s.Repo != "" {
			if _, ok := c.Workspace.Repo(s.Repo); !ok {
				v.add(key+"repo", fmt.Sprintf("unknown repository %q %s", s.Repo, c.knownRepos()))
			}
		}
		c.validateScheduleChannel(v, key, s)
	}
}

// validateScheduleChannel holds a schedule's channel to the enabled
// platforms, their allowed_channels and channel mappings.
func (c *Config) validateScheduleChannel(v *collector, key string, s Schedule) {
	if !c.Slack.Enabled && !c.Discord.Enabled {
		return // no platform runs schedules (-console)
	}
	platform, channel := c.PlatformChannel(s)
	var allowed []string
	var mapping map[string]ChannelRepos
	switch {
	case channel == "":
		v.add(key+"channel", "must not be empty: the channel id its threads open in")
		return
	case platform == "":
		v.add(key+"channel", fmt.Sprintf("%q: name its platform, slack:<id> or discord:<id>, when both are enabled", s.Channel))
		return
	case platform == PlatformSlack && c.Slack.Enabled:
		allowed, mapping = c.Slack.AllowedChannels, c.Slack.Channels
	case platform == PlatformDiscord && c.Discord.Enabled:
		mapping = c.Discord.Channels
	default:
		v.add(key+"channel", fmt.Sprintf("%q: %s is not enabled", s.Channel, platform))
		return
	}
	if len(allowed) > 0 && !slices.Contains(allowed, channel) {
		v.add(key+"channel", fmt.Sprintf("%q is not in %s.allowed_channels", channel, platform))
		return
	}
	repos, mapped := mapping[channel]
	switch {
	case mapped && s.Repo != "" && !slices.Contains(repos, AnyRepo) && !slices.Contains(repos, s.Repo):
		v.add(key+"repo", fmt.Sprintf("%q is not one of the repositories %s.channels maps %s to (%s)", s.Repo, platform, channel, strings.Join(repos, ", ")))
	case !mapped && s.Repo == "" && c.Workspace.DefaultRepo == "" && len(c.Workspace.Repos) != 1:
		v.add(key+"repo", "must name a repository: the channel is not mapped and there is no workspace.default_repo")
	}
}
