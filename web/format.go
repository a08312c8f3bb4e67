package web

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func formatTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	case n >= 1000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

func formatBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// fmtSscanKey parses an item key "s<session>-e<seq>".
func fmtSscanKey(key string, si *int, seq *int64) (int, error) {
	a, b, ok := strings.Cut(key, "-e")
	if !ok || !strings.HasPrefix(a, "s") {
		return 0, errors.New("bad key")
	}
	i, err := strconv.Atoi(a[1:])
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return 0, err
	}
	*si, *seq = i, n
	return 2, nil
}
