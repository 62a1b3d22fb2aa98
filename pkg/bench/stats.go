package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"
)

// latencies are the durations of one kind of operation.
type latencies struct {
	name    string
	samples []time.Duration
}

func (l *latencies) add(d time.Duration) { l.samples = append(l.samples, d) }

// quantile returns the q-quantile (0..1) by the nearest-rank method.
func (l *latencies) quantile(q float64) time.Duration {
	if len(l.samples) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l.samples...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	idx := int(q*float64(len(s))+0.5) - 1
	if idx < 0 {
		idx = 0
	}
	if idx >= len(s) {
		idx = len(s) - 1
	}
	return s[idx]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printTable writes the latencies as a table people read.
func printTable(w io.Writer, rows []*latencies) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t\n", r.name, len(r.samples),
			ms(r.quantile(0.5)), ms(r.quantile(0.9)), ms(r.quantile(0.99)), ms(r.quantile(1)))
	}
	tw.Flush()
}

// printJSON writes the scenario's one JSON line.
func printJSON(w io.Writer, v map[string]interface{}) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}
