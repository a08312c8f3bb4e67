package discord

import "strconv"

// DefaultAPIURL is Discord's REST base URL (without api/v9), used when
// Config.APIURL is empty.
const DefaultAPIURL = "https://discord.com/"

// Config is what the adapter needs to know about the Discord bot. The zero
// value of a field means the default its comment names. Error messages name
// a field by its key in the discord section of the configuration file (the
// bot fills Config from that section).
type Config struct {
	// Token is the bot token, with or without its "Bot " prefix. Required.
	Token string
	// ApplicationID is the bot's application; "" takes READY's.
	ApplicationID string
	// GuildIDs register the slash commands in these guilds (at once); empty
	// registers them globally.
	GuildIDs []string
	// APIURL replaces DefaultAPIURL for REST and the gateway lookup (when
	// not empty).
	APIURL string
	// AllowedUsers and AllowedRoles may click the bot's buttons and use its
	// slash commands; both empty: everyone.
	AllowedUsers []string
	AllowedRoles []string
	// ShardID and ShardCount split the bot's guilds over several gateway
	// connections, one per replica: Discord sends a guild's events (and its
	// slash commands) to shard (guild_id >> 22) % ShardCount, DMs to shard 0.
	// ShardCount 0 or 1 (the default) is one connection for everything.
	ShardID    int
	ShardCount int
}

// baseURL is the REST base URL (without api/v9), always ending with "/".
func (c Config) baseURL() string {
	switch {
	case c.APIURL == "":
		return DefaultAPIURL
	case c.APIURL[len(c.APIURL)-1] != '/':
		return c.APIURL + "/"
	}
	return c.APIURL
}

// sharded reports whether the bot's guilds are split over several gateway
// connections.
func (c Config) sharded() bool { return c.ShardCount > 1 }

// ownsGuild reports whether this connection's shard receives guildID's events
// (guildID "" is a DM: shard 0), by Discord's formula.
func (c Config) ownsGuild(guildID string) bool {
	if !c.sharded() {
		return true
	}
	if guildID == "" {
		return c.ShardID == 0
	}
	id, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil {
		return false
	}
	return int((id>>22)%uint64(c.ShardCount)) == c.ShardID
}
