package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// printResults writes the results as a table.
func printResults(w io.Writer, cfg config, results []*result) {
	fmt.Fprintf(w, "%d users, %d turns each (the first calls a tool), the model streaming %d chunks over %v\n",
		cfg.Users, cfg.Turns, cfg.Chunks, cfg.Latency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\trequests\terrors\treq/s\tadded p50\tadded p99\tCPU/req\tRSS/conv\tgoroutines\tstored/sent\t")
	for _, r := range results {
		rate := float64(r.Requests) / r.Wall.Seconds()
		cpu, perConv, goroutines, stored := "-", "-", "-", "-"
		if r.robby {
			cpu = fmt.Sprintf("%.2f ms", float64(r.CPU.Microseconds())/1000/float64(max(r.Requests, 1)))
			perConv = fmt.Sprintf("%.0f KiB", float64(r.RSSPeak-r.RSSBase)/1024/float64(r.Users))
			goroutines = fmt.Sprintf("%d → %d", r.GoStart, r.GoEnd)
		}
		if r.storedCheck {
			stored = fmt.Sprintf("%d/%d", r.Stored, r.Sent)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%v\t%v\t%s\t%s\t%s\t%s\t\n", r.Name, r.Requests, len(r.Errors), rate,
			ms(quantile(r.Added, 0.5)), ms(quantile(r.Added, 0.99)), cpu, perConv, goroutines, stored)
	}
	tw.Flush()
	for _, r := range results {
		for i, err := range r.Errors {
			if i == 3 {
				fmt.Fprintf(w, "%s: and %d more errors\n", r.Name, len(r.Errors)-3)
				break
			}
			fmt.Fprintf(w, "%s: %v\n", r.Name, err)
		}
		if r.StoreErr != nil {
			fmt.Fprintf(w, "%s: the store: %v\n", r.Name, r.StoreErr)
		}
	}
}

// ms rounds d to a tenth of a millisecond.
func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
