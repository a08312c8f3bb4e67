package chat

import "strings"

// CommandSpec is a chat command as people meet it: the word typed after
// "!", its line in the help, and how a platform with commands of its own
// (Discord's slash commands) offers it. The bridge holds the one table of
// them (bridge.Commands); an adapter registers and renders what it is given
// and keeps no list of its own.
type CommandSpec struct {
	// Name is the command word: "!" + Name in a message.
	Name string
	// Help is the command's line in the help, written with "!":
	// "`!diff` — this thread's changes against the default branch".
	Help string
	// Description is the short line a platform's command picker shows
	// (Discord allows at most 100 characters).
	Description string
	// Arg is the command's one argument, the rest of the line after the
	// command word; nil for a command that takes none.
	Arg *CommandArg
	// Input says the command's words go to the model (a request, or input
	// for the run going on) instead of being answered by the bot: a
	// platform shows them in the thread as it shows a message.
	Input bool
}

// CommandArg is a command's argument, as a platform with typed command
// options names and describes it.
type CommandArg struct {
	Name        string // the option's name: "text"
	Description string // what to give: "What to tell it"
	Placeholder string // how a usage line shows the value: "message" in "text:<message>"
	Required    bool
}

// Text is the command as a message: "!" + Name, then arg when there is one.
func (c CommandSpec) Text(arg string) string {
	if arg = strings.TrimSpace(arg); c.Arg != nil && arg != "" {
		return "!" + c.Name + " " + arg
	}
	return "!" + c.Name
}

// Usage is the command as a platform with named options writes it, after
// prefix: "/steer text:<message>", "/compact [focus:<text>]".
func (c CommandSpec) Usage(prefix string) string {
	u := prefix + c.Name
	if a := c.Arg; a != nil {
		opt := a.Name + ":<" + a.Placeholder + ">"
		if !a.Required {
			opt = "[" + opt + "]"
		}
		u += " " + opt
	}
	return u
}
