// Package opstest reads a bot's ops endpoints in tests: a plain GET and a
// /metrics scrape parsed as Prometheus parses it.
package opstest

import (
	"io"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Get fetches url and returns its status and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// Scrape fetches base+"/metrics" and parses it as Prometheus does.
func Scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := Get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d:\n%s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}
	return fams
}
