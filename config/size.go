package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ByteSize is an amount of memory or disk: a whole number of bytes, or a
// number with a binary unit (2GiB, 512MiB, 1.5G; K, M, G and T are KiB,
// MiB, GiB and TiB, as in docker run -m). KB, MB, GB and TB are refused:
// they mean powers of 1000 to some and of 1024 to others, and a limit off
// by 7% is found only when it bites.
type ByteSize int64

var sizeUnits = []struct {
	suffix string
	shift  uint
}{
	{"tib", 40}, {"gib", 30}, {"mib", 20}, {"kib", 10},
	{"t", 40}, {"g", 30}, {"m", 20}, {"k", 10},
	{"b", 0},
}

// errAmbiguousSize is the error of a size in KB, MB, GB or TB.
var errAmbiguousSize = errors.New("is ambiguous")

// UnmarshalText parses a size; see ByteSize.
func (s *ByteSize) UnmarshalText(b []byte) error {
	text := strings.ToLower(strings.TrimSpace(string(b)))
	for i, u := range []string{"kb", "mb", "gb", "tb"} {
		if n, ok := strings.CutSuffix(text, u); ok && n != "" && strings.Trim(n, "0123456789. ") == "" {
			bin := strings.ToUpper(u[:1]) + "iB"
			return fmt.Errorf("%q %w (10^%d or 2^%d bytes per %s?): write %s%s for 2^%d, or a number of bytes",
				string(b), errAmbiguousSize, 3*(i+1), 10*(i+1), strings.ToUpper(u), strings.TrimSpace(n), bin, 10*(i+1))
		}
	}
	num, shift := text, uint(0)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(text, u.suffix); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Errorf("not a size: %q", string(b))
	}
	v := f * float64(uint64(1)<<shift)
	if v > math.MaxInt64 {
		return fmt.Errorf("size too large: %q", string(b))
	}
	*s = ByteSize(v)
	return nil
}

// String renders the size in the largest whole binary unit.
func (s ByteSize) String() string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if s >= 1<<u.shift && int64(s)%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", int64(s)>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d", int64(s))
}
