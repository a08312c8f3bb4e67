package storagetest

import (
	"slices"
	"testing"
	"time"
)

// ReportLatencies reports the median, 99th percentile and maximum of the
// latencies a benchmark's workers measured (p50-ms, p99-ms, max-ms).
func ReportLatencies(b *testing.B, lat [][]time.Duration) {
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(all[min(int(p*float64(len(all))), len(all)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(all[len(all)-1])/float64(time.Millisecond), "max-ms")
}
