package config

import (
	"fmt"
	"strings"
)

// RepoIssues lets a repository's issues open threads: an issue that gets
// Label, or a comment `/threadsmith <request>` on an issue or pull request
// by someone who may push, opens a thread in Channel whose first request is
// the issue's text. The forge's webhook brings them (webhook_secret), and
// the repository's token reads the issue and comments on it.
type RepoIssues struct {
	// Label is the label that hands an issue to the bot ("" : only
	// `/threadsmith` comments do).
	Label string `yaml:"label"`
	// Channel is where the threads open: "slack:<channel id>",
	// "discord:<channel id>", or the id alone with one platform enabled.
	Channel string `yaml:"channel"`
}

// Target is the platform and channel id the issues' threads open in; ok
// is false when Channel does not name an enabled platform's channel.
func (i RepoIssues) Target(c *Config) (platform, channel string, ok bool) {
	p, ch, found := strings.Cut(strings.TrimSpace(i.Channel), ":")
	if !found {
		ps := c.Platforms()
		if len(ps) != 1 {
			return "", "", false
		}
		p, ch = ps[0], p
	}
	for _, e := range c.Platforms() {
		if e == p && ch != "" {
			return p, ch, true
		}
	}
	return "", "", false
}

// validateIssues checks a repository's issues section.
func (c *Config) validateIssues(v *collector, key string, r Repo) {
	i := r.Issues
	if i == nil {
		return
	}
	switch _, _, ok := i.Target(c); {
	case strings.TrimSpace(i.Channel) == "":
		v.add(key+".channel", "must name the channel the issues' threads open in (slack:<id> or discord:<id>)")
	case !ok:
		v.add(key+".channel", fmt.Sprintf("%q is not a channel of an enabled platform: write slack:<id> or discord:<id> (the id alone with one platform enabled)", i.Channel))
	}
	if strings.ContainsAny(i.Label, "\n\x00") {
		v.add(key+".label", "must be one line")
	}
	if r.WebhookSecret == "" {
		v.add(key, "needs webhook_secret: the forge's issue and comment webhooks bring the issues to /hooks/"+r.Name)
	}
	if r.Token == "" {
		v.add(key, "needs token: the bot reads the issue and comments on it with the repository's token")
	}
}
