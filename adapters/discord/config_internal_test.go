package discord

import (
	"strconv"
	"testing"
)

// ownsGuild is Discord's shard formula: (guild_id >> 22) % shard_count, DMs
// on shard 0, everything on one unsharded connection.
func TestOwnsGuild(t *testing.T) {
	guild := strconv.FormatUint(5<<22|12345, 10) // shard 5 % n
	for _, tc := range []struct {
		id, count int
		guild     string
		want      bool
	}{
		{0, 0, guild, true}, {0, 1, guild, true}, {0, 0, "", true},
		{1, 2, guild, true}, {0, 2, guild, false},
		{2, 3, guild, true}, {1, 3, guild, false},
		{0, 2, "", true}, {1, 2, "", false},
		{0, 2, "not-a-snowflake", false},
	} {
		c := Config{ShardID: tc.id, ShardCount: tc.count}
		if got := c.ownsGuild(tc.guild); got != tc.want {
			t.Errorf("shard %d/%d owns guild %q = %v, want %v", tc.id, tc.count, tc.guild, got, tc.want)
		}
	}
}
