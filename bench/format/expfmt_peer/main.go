// expfmt_peer parses one Prometheus text-format file with Go's reference parser
// (github.com/prometheus/common/expfmt TextParser.TextToMetricFamilies) and prints a summary:
// families, samples (exposition lines: histogram/summary buckets or quantiles plus _sum and
// _count) and the elapsed read and parse times. It is the peer bench/parse_vs_expfmt.sh times
// `modelmetrics parse --strict -o summary` against.
//
// Built offline against the Debian packages (golang-go, golang-github-prometheus-common-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o expfmt_peer .
//
// Exit 0 when the file parses, 1 on a read or parse error (printed to stderr).
package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

func samples(mf *dto.MetricFamily) int {
	n := 0
	for _, m := range mf.GetMetric() {
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			n += len(m.GetHistogram().GetBucket()) + 2
		case dto.MetricType_SUMMARY:
			n += len(m.GetSummary().GetQuantile()) + 2
		default:
			n++
		}
	}
	return n
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: expfmt_peer FILE")
		os.Exit(2)
	}
	path := os.Args[1]
	start := time.Now()
	body, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	read := time.Since(start)
	var parser expfmt.TextParser
	parseStart := time.Now()
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	parse := time.Since(parseStart)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
		os.Exit(1)
	}
	total := 0
	for _, mf := range families {
		total += samples(mf)
	}
	fmt.Printf("%s: %d families, %d samples, read %.1f ms, parse %.1f ms (%.0f MB/s)\n", path,
		len(families), total, read.Seconds()*1e3, parse.Seconds()*1e3,
		float64(len(body))/1e6/parse.Seconds())
}
