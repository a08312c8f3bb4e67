package discord

import (
	"context"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// command is one slash command: its registration and how it becomes input.
// The adapter's list is /code, its own, then the bridge's commands it was
// given (Options.Commands), so what Discord shows and what the adapter
// understands cannot drift apart from the bridge's table.
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

// codeCommand is /code, Discord's way to open a session thread: it has no
// text command.
var codeCommand = command{
	name:        cmdCode,
	description: "Start a coding session in a new thread, or give this session a new request",
	options: []*discordgo.ApplicationCommandOption{
		stringOption("prompt", "What should I do?", true),
		stringOption("repo", "Repository to work on (default: the channel's or the bot's default)", false),
	},
	text:  func(opts map[string]string) string { return opts["prompt"] },
	usage: "/code prompt:<request> [repo:<name>]",
	echo:  true,
}

// slashCommands is /code and the bridge's commands as slash commands. A
// command whose words go to the model is echoed, like /code.
func slashCommands(specs []chat.CommandSpec) []command {
	out := []command{codeCommand}
	for _, sp := range specs {
		c := command{name: sp.Name, description: sp.Description, usage: sp.Usage("/"), echo: sp.Input}
		option := ""
		if a := sp.Arg; a != nil {
			option = a.Name
			c.options = []*discordgo.ApplicationCommandOption{stringOption(a.Name, a.Description, a.Required)}
		}
		c.text = func(opts map[string]string) string { return sp.Text(opts[option]) }
		out = append(out, c)
	}
	return out
}

func (a *Adapter) lookupCommand(name string) *command {
	for i := range a.commands {
		if a.commands[i].name == name {
			return &a.commands[i]
		}
	}
	return nil
}

// Commands returns the application commands an adapter given specs
// registers, as discordgo sends them: /code, then specs in their order.
func Commands(specs []chat.CommandSpec) []*discordgo.ApplicationCommand {
	return applicationCommands(slashCommands(specs))
}

func applicationCommands(cmds []command) []*discordgo.ApplicationCommand {
	out := make([]*discordgo.ApplicationCommand, 0, len(cmds))
	for _, c := range cmds {
		out = append(out, &discordgo.ApplicationCommand{
			Type: discordgo.ChatApplicationCommand, Name: c.name, Description: c.description, Options: c.options,
		})
	}
	return out
}

// helpText is the answer to /help where there is no session to ask.
func (a *Adapter) helpText() string {
	var b strings.Builder
	b.WriteString("**threadsmith** works in threads: `/code` in a channel opens one for your request.\n")
	for _, c := range a.commands {
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
		_, err := a.s.ApplicationCommandBulkOverwrite(appID, guild, applicationCommands(a.commands), ownCall(ctx)...)
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
		a.log.Info("slash commands registered", "guild", guild, "count", len(a.commands))
	}
}
