package metrics

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"plug.directory/prober/data"
)

// namespace prefixes every metric name.
const namespace = "prober"

// family collects constant metrics: every value is known when the file is
// written, so the file is a snapshot of one step, deterministic for the
// same figures.
type family []prometheus.Metric

// Describe sends the descriptors of the metrics, as Collect finds them.
func (f family) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(f, ch) }

// Collect sends every metric.
func (f family) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f {
		ch <- m
	}
}

// gauge appends one gauge sample.
func (f *family) gauge(name, help string, v float64, labels ...string) {
	*f = append(*f, prometheus.MustNewConstMetric(prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v, labels...))
}

// step is what every step's file says about the step itself.
type step struct {
	name     string    // "run" or "publish": the metric names' second part
	finished time.Time // when the step ended
	ok       bool      // whether it did its work
	took     time.Duration
}

// write writes f plus the step's own metrics to path atomically. The last
// success time is the step's end when it went well, else the one the file
// it replaces holds (none when that file is missing or does not parse).
func write(path string, st step, f family) error {
	last := float64(0)
	if st.ok {
		last = unixSeconds(st.finished)
	} else if prev, err := lastSuccess(path, st.name); err == nil {
		last = prev
	} // else: no earlier file, or a damaged one: no last success is known, and none is invented
	p := namespace + "_" + st.name + "_"
	if last > 0 {
		f.gauge(p+"last_success_timestamp_seconds", "When the last "+st.name+" that did its work ended, Unix time.", last)
	}
	f.gauge(p+"last_timestamp_seconds", "When the last "+st.name+" ended, Unix time, whether it went well or not.", unixSeconds(st.finished))
	f.gauge(p+"success", "1 when the last "+st.name+" did its work, 0 when it failed.", boolValue(st.ok))
	f.gauge(p+"duration_seconds", "Wall time of the last "+st.name+".", st.took.Seconds())
	f = append(f, prometheus.MustNewConstMetric(
		prometheus.NewDesc(namespace+"_build_info", "The prober's version (the User-Agent's), as a label, in the file of each step (step) so the files gathered together hold each series once; always 1.", []string{"step", "version"}, nil),
		prometheus.GaugeValue, 1, st.name, data.Version()))
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(f); err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	return nil
}

// lastSuccess reads the last success time of the step name from the file at
// path, as a collector would.
func lastSuccess(path, name string) (float64, error) {
	fams, err := ReadFile(path)
	if err != nil {
		return 0, err
	}
	mf, ok := fams[namespace+"_"+name+"_last_success_timestamp_seconds"]
	if !ok || len(mf.GetMetric()) != 1 {
		return 0, fmt.Errorf("read metrics %s: no last success time", path)
	}
	return mf.GetMetric()[0].GetGauge().GetValue(), nil
}

// ReadFile parses a metrics file in the text format with the client
// library's parser, by metric name. A missing file's error wraps
// fs.ErrNotExist; one that does not parse names the file.
func ReadFile(path string) (map[string]*dto.MetricFamily, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		return nil, fmt.Errorf("read metrics %s: %w", path, err)
	}
	return fams, nil
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
