package config

import "go.yaml.in/yaml/v3"

// ChannelRepos are the repositories a mapped channel's threads may work on:
// the first is the one they get, the others may be named with repo=<name>,
// and AnyRepo among them allows every repository (the mapping is then a
// default that binds nothing). In YAML a single name or a list of names.
type ChannelRepos []string

// AnyRepo in a channel's repositories lets its threads name any repository.
const AnyRepo = "*"

// UnmarshalYAML takes a single name or a list of names.
func (r *ChannelRepos) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*r = ChannelRepos{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*r = list
	return nil
}
