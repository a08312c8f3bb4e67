package sandbox

import (
	"slices"
	"testing"
)

func TestDedupEnvKeepsTheLastLikeOSExec(t *testing.T) {
	got := dedupEnv([]string{"A=1", "B=2", "A=3", "C", "B=4"})
	if want := []string{"A=3", "C", "B=4"}; !slices.Equal(got, want) {
		t.Errorf("dedupEnv = %q, want %q", got, want)
	}
}
