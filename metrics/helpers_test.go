package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// dtoOf returns m as the client library writes it.
func dtoOf(t *testing.T, m prometheus.Metric) *dto.Metric {
	t.Helper()
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		t.Fatal(err)
	}
	return &pb
}
