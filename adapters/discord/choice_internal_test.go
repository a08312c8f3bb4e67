package discord

import (
	"encoding/json"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// A choice is taken only with one value that the message's own menu
// offers, and that cannot be more than one word: a forged payload is
// dropped.
func TestChoiceOfTakesOnlyOfferedValues(t *testing.T) {
	components, err := json.Marshal(actionComponents([]chat.Action{
		{ID: "repo", Options: []chat.Option{{Value: "app"}, {Value: "web"}}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"id":"1","channel_id":"2","components":` + string(components) + `}`)
	interaction := func() *discordgo.Interaction {
		var m discordgo.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return &discordgo.Interaction{Message: &m}
	}
	data := func(id string, values ...string) discordgo.MessageComponentInteractionData {
		return discordgo.MessageComponentInteractionData{CustomID: id, ComponentType: discordgo.SelectMenuComponent, Values: values}
	}
	if v, ok := choiceOf(interaction(), data("repo", "web")); !ok || v != "web" {
		t.Fatalf("choiceOf = %q, %v; want web", v, ok)
	}
	for name, d := range map[string]discordgo.MessageComponentInteractionData{
		"a value not offered":  data("repo", "secret"),
		"a value with a break": data("repo", "web\n!reset"),
		"two values":           data("repo", "app", "web"),
		"no value":             data("repo"),
		"another menu":         data("model", "web"),
		"a button":             {CustomID: "repo", ComponentType: discordgo.ButtonComponent, Values: []string{"web"}},
	} {
		if v, ok := choiceOf(interaction(), d); ok {
			t.Errorf("%s: choiceOf = %q, want it dropped", name, v)
		}
	}
	if v, ok := choiceOf(&discordgo.Interaction{}, data("repo", "web")); ok {
		t.Errorf("without the message: choiceOf = %q, want it dropped", v)
	}
}
