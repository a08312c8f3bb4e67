package discord

import (
	"context"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// command is one slash command: its registration and how it becomes input.
// The table below is the single source of both, so what Discord shows and
// what the adapter understands cannot drift apart.
type command struct {
	name        string
	description string
	options     []*discordgo.ApplicationCommandOption
	// text renders the command as the bridge's text command ("!steer …").
	text func(opts map[string]string) string
	// usage is the command as /help shows it.
	usage string
	// echo commands are answered publicly with what was asked, and that
	// answer is the message acknowledgement reactions go on.
	echo bool
}

const (
	cmdCode = "code"
	cmdHelp = "help"
)

// maxOptionText is Discord's limit on a string option.
const maxOptionText = 6000

func stringOption(name, description string, required bool) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{
		Type: discordgo.ApplicationCommandOptionString, Name: name, Description: description,
		Required: required, MaxLength: maxOptionText,
	}
}

// bang renders "!name" followed by the option's value, if any.
func bang(name, option string) func(map[string]string) string {
	return func(opts map[string]string) string {
		if v := strings.TrimSpace(opts[option]); option != "" && v != "" {
			return "!" + name + " " + v
		}
		return "!" + name
	}
}

var commands = []command{
	{
		name:        cmdCode,
		description: "Start a coding session in a new thread, or give this session a new request",
		options: []*discordgo.ApplicationCommandOption{
			stringOption("prompt", "What should I do?", true),
			stringOption("repo", "Repository to work on (default: the channel's or the bot's default)", false),
		},
		text:  func(opts map[string]string) string { return opts["prompt"] },
		usage: "/code prompt:<request> [repo:<name>]",
		echo:  true,
	},
	{
		name:        "steer",
		description: "Redirect the running agent at its next step",
		options:     []*discordgo.ApplicationCommandOption{stringOption("text", "What to tell it", true)},
		text:        bang("steer", "text"),
		usage:       "/steer text:<message>",
		echo:        true,
	},
	{
		name:        "followup",
		description: "Queue a message for when the current run ends",
		options:     []*discordgo.ApplicationCommandOption{stringOption("text", "The message", true)},
		text:        bang("followup", "text"),
		usage:       "/followup text:<message>",
		echo:        true,
	},
	{name: "stop", description: "Stop the current run (queued messages stay queued)", text: bang("stop", ""), usage: "/stop"},
	{name: "status", description: "Show model, repo, branch, context use, queue and last push", text: bang("status", ""), usage: "/status"},
	{
		name:        "compact",
		description: "Compact the conversation to free context",
		options:     []*discordgo.ApplicationCommandOption{stringOption("focus", "What the summary should keep", false)},
		text:        bang("compact", "focus"),
		usage:       "/compact [focus:<text>]",
	},
	{name: "diff", description: "Show the branch's changes against the default branch", text: bang("diff", ""), usage: "/diff"},
	{name: "reset", description: "Start a new session on this thread and branch", text: bang("reset", ""), usage: "/reset"},
	{
		name:        "model",
		description: "List the models, or switch this session's model",
		options:     []*discordgo.ApplicationCommandOption{stringOption("name", "Model name (leave out to list the models)", false)},
		text:        bang("model", "name"),
		usage:       "/model [name:<model>]",
	},
	{name: "tools", description: "List the tools this session has, built in and from MCP servers", text: bang("tools", ""), usage: "/tools"},
	{name: "pr", description: "Show this thread's pull request (opened now if the branch has none)", text: bang("pr", ""), usage: "/pr"},
	{
		name:        "review",
		description: "Give the agent the pull request's new review comments to address",
		text:        bang("review", ""),
		usage:       "/review",
		echo:        true, // a request like /code: queued while a run works
	},
	{name: "link", description: "A fresh link to this session's web page", text: bang("link", ""), usage: "/link"},
	{name: cmdHelp, description: "List the commands", text: bang("help", ""), usage: "/help"},
}

func lookupCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// Commands returns the application commands the adapter registers, as
// discordgo sends them.
func Commands() []*discordgo.ApplicationCommand {
	out := make([]*discordgo.ApplicationCommand, 0, len(commands))
	for _, c := range commands {
		out = append(out, &discordgo.ApplicationCommand{
			Type: discordgo.ChatApplicationCommand, Name: c.name, Description: c.description, Options: c.options,
		})
	}
	return out
}

// helpText is the answer to /help where there is no session to ask.
func helpText() string {
	var b strings.Builder
	b.WriteString("**threadsmith** works in threads: `/code` in a channel opens one for your request.\n")
	for _, c := range commands {
		b.WriteString("`" + c.usage + "` — " + c.description + "\n")
	}
	b.WriteString("In a session thread, plain messages are input too, and the commands work as text (`!status`, `!steer …`).")
	return b.String()
}

// registerCommands overwrites the application's commands with the table, in
// every configured guild or else globally. Failures are logged: the bot still
// works in existing threads.
func (a *Adapter) registerCommands(ctx context.Context) {
	appID := a.ApplicationID()
	scopes := a.cfg.GuildIDs
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	for _, guild := range scopes {
		_, err := a.s.ApplicationCommandBulkOverwrite(appID, guild, Commands(), ownCall(ctx)...)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			scope := "globally"
			if guild != "" {
				scope = "in guild " + guild
			}
			a.log.Error("registering slash commands failed: invite the bot with the applications.commands scope",
				"scope", scope, "err", restError("register commands", err, nil))
			continue
		}
		a.log.Info("slash commands registered", "guild", guild, "count", len(commands))
	}
}
