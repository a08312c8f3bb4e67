package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Days is a long duration: a whole number of days ("90d") or a Go duration
// ("2160h"). 0 means off.
type Days time.Duration

// UnmarshalText parses a Days value; see Days.
func (d *Days) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	if n, ok := strings.CutSuffix(text, "d"); ok {
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if err != nil || v < 0 || v > 100_000 {
			return fmt.Errorf("not a number of days: %q", string(b))
		}
		*d = Days(time.Duration(v) * 24 * time.Hour)
		return nil
	}
	if text == "0" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(text)
	if err != nil {
		return err
	}
	*d = Days(v)
	return nil
}

// String renders whole days as "90d", anything else as a Go duration.
func (d Days) String() string {
	v := time.Duration(d)
	if v%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", v/(24*time.Hour))
	}
	return v.String()
}
