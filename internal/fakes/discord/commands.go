package discordfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// commandNameRE is Discord's rule for command and option names.
var commandNameRE = regexp.MustCompile(`^[-_'\p{L}\p{N}\p{Devanagari}\p{Thai}]{1,32}$`)

// commandIn is a command as an application sends it.
type commandIn struct {
	Type                     int             `json:"type"`
	Name                     string          `json:"name"`
	Description              string          `json:"description"`
	Options                  []CommandOption `json:"options"`
	DefaultMemberPermissions *string         `json:"default_member_permissions"`
	DMPermission             *bool           `json:"dm_permission"`
	NSFW                     *bool           `json:"nsfw"`
	Contexts                 json.RawMessage `json:"contexts"`
	IntegrationTypes         json.RawMessage `json:"integration_types"`
}

const (
	cmdChatInput = 1
	cmdUser      = 2
	cmdMessage   = 3

	optSubCommand      = 1
	optSubCommandGroup = 2
	optAttachment      = 11
)

// validateCommand checks one command the way Discord does; prefix is the
// error path of the command in the body ("" or "3.").
func validateCommand(in commandIn, prefix string, errs map[string]string) {
	typ := in.Type
	if typ == 0 {
		typ = cmdChatInput
	}
	switch typ {
	case cmdChatInput:
		if !commandNameRE.MatchString(in.Name) || strings.ToLower(in.Name) != in.Name {
			errs[prefix+"name"] = "APPLICATION_COMMAND_INVALID_NAME: Command name is invalid"
		}
		if n := utf8.RuneCountInString(in.Description); n < 1 || n > 100 {
			errs[prefix+"description"] = "BASE_TYPE_BAD_LENGTH: Must be between 1 and 100 in length."
		}
		validateOptions(in.Options, prefix+"options", 0, errs)
	case cmdUser, cmdMessage:
		if n := utf8.RuneCountInString(in.Name); n < 1 || n > 32 {
			errs[prefix+"name"] = "BASE_TYPE_BAD_LENGTH: Must be between 1 and 32 in length."
		}
		if in.Description != "" {
			errs[prefix+"description"] = "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION: Context menu commands cannot have description"
		}
		if len(in.Options) > 0 {
			errs[prefix+"options"] = "APPLICATION_COMMAND_CONTEXT_MENU_OPTIONS: Context menu commands cannot have options"
		}
	default:
		errs[prefix+"type"] = "BASE_TYPE_CHOICES: Value must be one of {1, 2, 3, 4}."
	}
}

func validateOptions(opts []CommandOption, path string, depth int, errs map[string]string) {
	if len(opts) > 25 {
		errs[path] = "BASE_TYPE_MAX_LENGTH: Must be 25 or fewer in length."
		return
	}
	seen := map[string]bool{}
	optional := false
	subs := 0
	for i, o := range opts {
		p := fmt.Sprintf("%s.%d.", path, i)
		if !commandNameRE.MatchString(o.Name) || strings.ToLower(o.Name) != o.Name {
			errs[p+"name"] = "APPLICATION_COMMAND_INVALID_NAME: Command name is invalid"
		}
		if seen[o.Name] {
			errs[p+"name"] = "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS: Option names must be unique"
		}
		seen[o.Name] = true
		if n := utf8.RuneCountInString(o.Description); n < 1 || n > 100 {
			errs[p+"description"] = "BASE_TYPE_BAD_LENGTH: Must be between 1 and 100 in length."
		}
		if o.Type < optSubCommand || o.Type > optAttachment {
			errs[p+"type"] = "BASE_TYPE_CHOICES: Value must be one of {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}."
			continue
		}
		if o.Type == optSubCommand || o.Type == optSubCommandGroup {
			subs++
			if depth >= 2 || (depth == 1 && o.Type == optSubCommandGroup) {
				errs[p+"type"] = "APPLICATION_COMMAND_OPTION_TYPE_INVALID: Sub-command groups cannot be nested"
			}
			validateOptions(o.Options, p+"options", depth+1, errs)
			continue
		}
		if o.Required && optional {
			errs[p+"required"] = "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID: Required options must be placed before non-required options"
		}
		optional = optional || !o.Required
		if len(o.Choices) > 25 {
			errs[p+"choices"] = "BASE_TYPE_MAX_LENGTH: Must be 25 or fewer in length."
		}
		if len(o.Choices) > 0 && o.Autocomplete {
			errs[p+"autocomplete"] = "APPLICATION_COMMAND_AUTOCOMPLETE_INVALID: Autocomplete cannot be used with choices"
		}
	}
	if subs > 0 && subs != len(opts) {
		errs[path] = "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID: Sub-commands cannot be mixed with other options"
	}
}

// commandScopeLocked resolves the {app} and {guild} of a command route.
func (s *Server) commandScopeLocked(c *call) (string, response, bool) {
	if c.path("app") != s.cfg.appID {
		return "", errMissingAccess, false
	}
	gid := c.path("guild")
	if gid != "" && s.guilds[gid] == nil {
		return "", errMissingAccess, false
	}
	return gid, response{}, true
}

// storeCommandLocked builds the stored form of in for scope. A command keeps
// its id across overwrites while its name and type stay; its version changes
// when its definition does.
func (s *Server) storeCommandLocked(scope string, in commandIn, old []*commandState) *commandState {
	if in.Type == 0 {
		in.Type = cmdChatInput
	}
	def := mustJSON(in)
	var prev *commandState
	for _, o := range old {
		if o.Name == in.Name && o.Type == in.Type {
			prev = o
		}
	}
	cs := &commandState{Command: Command{
		ApplicationID: s.cfg.appID,
		GuildID:       scope,
		Type:          in.Type,
		Name:          in.Name,
		Description:   in.Description,
		Options:       in.Options,
	}}
	switch {
	case prev == nil:
		cs.ID = s.nextIDLocked()
		cs.Version = s.nextIDLocked()
	case bytes.Equal(prev.def, def):
		cs.ID, cs.Version = prev.ID, prev.Version
	default:
		cs.ID, cs.Version = prev.ID, s.nextIDLocked()
	}
	o := obj{
		"id":                         cs.ID,
		"application_id":             s.cfg.appID,
		"version":                    cs.Version,
		"default_member_permissions": in.DefaultMemberPermissions,
		"type":                       in.Type,
		"name":                       in.Name,
		"name_localizations":         nil,
		"description":                in.Description,
		"description_localizations":  nil,
		"nsfw":                       in.NSFW != nil && *in.NSFW,
		"integration_types":          []int{0},
	}
	if len(in.Options) > 0 {
		o["options"] = in.Options
	}
	if scope != "" {
		o["guild_id"] = scope
	} else {
		o["dm_permission"] = in.DMPermission == nil || *in.DMPermission
		o["contexts"] = nil
	}
	cs.Raw = mustJSON(o)
	cs.def = def
	return cs
}

func (cs *commandState) served() json.RawMessage { return cs.Raw }

func (s *Server) listCommands(c *call) response {
	scope, resp, valid := s.commandScopeLocked(c)
	if !valid {
		return resp
	}
	out := []any{}
	for _, cs := range s.commands[scope] {
		out = append(out, cs.served())
	}
	return ok(out)
}

func (s *Server) overwriteCommands(c *call) response {
	scope, resp, valid := s.commandScopeLocked(c)
	if !valid {
		return resp
	}
	var list []commandIn
	if err := json.Unmarshal(c.body, &list); err != nil {
		return invalidForm(map[string]string{"": "BASE_TYPE_ARRAY: Must be an array."})
	}
	errs := map[string]string{}
	if len(list) > 100 {
		errs[""] = "BASE_TYPE_MAX_LENGTH: Must be 100 or fewer in length."
	}
	names := map[string]bool{}
	for i, in := range list {
		validateCommand(in, fmt.Sprintf("%d.", i), errs)
		key := fmt.Sprintf("%d/%s", max(in.Type, 1), in.Name)
		if names[key] {
			errs[fmt.Sprintf("%d.name", i)] = "APPLICATION_COMMANDS_DUPLICATE_NAME: Application command names must be unique"
		}
		names[key] = true
	}
	if len(errs) > 0 {
		return invalidForm(errs)
	}
	old := s.commands[scope]
	next := make([]*commandState, 0, len(list))
	out := make([]any, 0, len(list))
	for _, in := range list {
		cs := s.storeCommandLocked(scope, in, old)
		next = append(next, cs)
		out = append(out, cs.served())
	}
	s.commands[scope] = next
	s.overwrites[scope]++
	return ok(out)
}

func (s *Server) createCommand(c *call) response {
	scope, resp, valid := s.commandScopeLocked(c)
	if !valid {
		return resp
	}
	var in commandIn
	if err := json.Unmarshal(c.body, &in); err != nil {
		return invalidForm(map[string]string{"": "DICT_TYPE_CONVERT: Only dictionaries may be used in a DictType"})
	}
	errs := map[string]string{}
	validateCommand(in, "", errs)
	if len(errs) > 0 {
		return invalidForm(errs)
	}
	old := s.commands[scope]
	cs := s.storeCommandLocked(scope, in, old)
	i := slices.IndexFunc(old, func(o *commandState) bool { return o.ID == cs.ID })
	if i >= 0 {
		old[i] = cs
		return ok(cs.served())
	}
	s.commands[scope] = append(old, cs)
	return created(cs.served())
}

func (s *Server) getCommand(c *call) response {
	scope, resp, valid := s.commandScopeLocked(c)
	if !valid {
		return resp
	}
	for _, cs := range s.commands[scope] {
		if cs.ID == c.path("command") {
			return ok(cs.served())
		}
	}
	return errUnknownCommand
}

func (s *Server) deleteCommand(c *call) response {
	scope, resp, valid := s.commandScopeLocked(c)
	if !valid {
		return resp
	}
	cmds := s.commands[scope]
	i := slices.IndexFunc(cmds, func(cs *commandState) bool { return cs.ID == c.path("command") })
	if i < 0 {
		return errUnknownCommand
	}
	s.commands[scope] = slices.Delete(slices.Clone(cmds), i, i+1)
	return response{status: http.StatusNoContent}
}

// findCommandLocked finds the chat-input command a user in a channel of
// guildID would see under name: the guild's own first, then the global one.
func (s *Server) findCommandLocked(guildID, name string) *commandState {
	scopes := []string{""}
	if guildID != "" {
		scopes = []string{guildID, ""}
	}
	for _, scope := range scopes {
		for _, cs := range s.commands[scope] {
			if cs.Name == name && cs.Type == cmdChatInput {
				return cs
			}
		}
	}
	return nil
}
