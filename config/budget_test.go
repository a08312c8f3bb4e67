package config

import (
	"strings"
	"testing"
)

func TestBudgetKeys(t *testing.T) {
	cfg := mustParse(t, "llm: {api_key: k}\nbudget:\n  per_user_daily: 5\n  per_thread: 20.5\n", nil)
	if cfg.Budget.PerUserDaily != 5 || cfg.Budget.PerThread != 20.5 || !cfg.Budget.On() {
		t.Errorf("budget = %+v, want 5 a day and 20.5 a thread", cfg.Budget)
	}
	if Default().Budget.On() {
		t.Error("a budget is on by default")
	}
	for _, bad := range []string{"per_user_daily: -1", "per_thread: .nan", "per_thread: .inf"} {
		cfg := mustParse(t, "llm: {api_key: k}\nbudget: {"+bad+"}\n", nil)
		key := "budget." + strings.SplitN(bad, ":", 2)[0]
		wantErr(t, cfg.Validate(), key, "must be an amount of 0 or more")
	}
}
