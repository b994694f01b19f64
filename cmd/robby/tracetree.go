package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/robby-go/robby/internal/trunc"
)

// treePrinter is the span processor of -trace. It keeps the spans of each trace
// as they end. When the trace's root (a run) ends, it prints them as a tree,
// children in the order they started.
//
// A run's span ends before its stream's last event, while the answer's line on
// stdout is still open. A command showing answers so holds the trees back
// (hold). It prints them once the line is ended (release).
type treePrinter struct {
	w io.Writer

	mu      sync.Mutex
	traces  map[trace.TraceID][]sdktrace.ReadOnlySpan
	holding bool
	held    strings.Builder // the trees held back
}

func newTreePrinter(w io.Writer) *treePrinter {
	return &treePrinter{w: w, traces: make(map[trace.TraceID][]sdktrace.ReadOnlySpan)}
}

func (p *treePrinter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (p *treePrinter) OnEnd(s sdktrace.ReadOnlySpan) {
	id := s.SpanContext().TraceID()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.traces[id] = append(p.traces[id], s)
	if s.Parent().IsValid() && !s.Parent().IsRemote() {
		return
	}
	spans := p.traces[id]
	delete(p.traces, id)
	writeTree(&p.held, s, spans, "", "")
	if !p.holding {
		p.flush()
	}
}

// hold keeps the trees of the runs that end from now on until release.
func (p *treePrinter) hold() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = true
}

// release prints the trees held back.
func (p *treePrinter) release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush()
}

func (p *treePrinter) flush() {
	io.WriteString(p.w, p.held.String())
	p.held.Reset()
}

// Shutdown prints what is still held back: nothing is lost.
func (p *treePrinter) Shutdown(context.Context) error {
	p.release()
	return nil
}

func (p *treePrinter) ForceFlush(context.Context) error { return nil }

// writeTree writes s and, below it, its children among spans.
func writeTree(b *strings.Builder, s sdktrace.ReadOnlySpan, spans []sdktrace.ReadOnlySpan, lead, childLead string) {
	fmt.Fprintf(b, "%s%s  %s%s\n", lead, s.Name(), duration(s.EndTime().Sub(s.StartTime())), details(s))
	var children []sdktrace.ReadOnlySpan
	for _, c := range spans {
		if c.Parent().SpanID() == s.SpanContext().SpanID() {
			children = append(children, c)
		}
	}
	slices.SortStableFunc(children, func(x, y sdktrace.ReadOnlySpan) int { return x.StartTime().Compare(y.StartTime()) })
	for i, c := range children {
		if i == len(children)-1 {
			writeTree(b, c, spans, childLead+"└─ ", childLead+"   ")
		} else {
			writeTree(b, c, spans, childLead+"├─ ", childLead+"│  ")
		}
	}
}

// duration is d rounded for a reader: 1.24s, 312ms, 85µs.
func duration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// shown are the attributes the tree shows, under short names.
var shown = []struct {
	key   attribute.Key
	label string
}{
	{"gen_ai.request.model", "model"},
	{"gen_ai.response.finish_reasons", "finish"},
	{"gen_ai.usage.input_tokens", "in"},
	{"gen_ai.usage.output_tokens", "out"},
	{"robby.usage.cost", "cost"},
	{"gen_ai.tool.type", "type"},
	{"robby.mcp.server", "mcp"},
	{"gen_ai.tool.call.id", "call"},
	{"robby.turns", "turns"},
	{"robby.outcome", "outcome"},
	{"server.address", "server"},
	{"error.type", "error"},
}

// details returns the attributes shown of s, and its error.
func details(s sdktrace.ReadOnlySpan) string {
	attrs := attribute.NewSet(s.Attributes()...)
	var b strings.Builder
	for _, sh := range shown {
		v, ok := attrs.Value(sh.key)
		if !ok {
			continue
		}
		text := v.String()
		switch sh.key {
		case "gen_ai.request.model":
			if strings.HasSuffix(s.Name(), " "+text) {
				continue // in the name already
			}
		case "gen_ai.response.finish_reasons":
			text = strings.Join(v.AsStringSlice(), ",")
		case "server.address":
			if port, ok := attrs.Value("server.port"); ok {
				text = net.JoinHostPort(text, port.String())
			}
		}
		fmt.Fprintf(&b, "  %s=%s", sh.label, text)
	}
	if m, ok := attrs.Value("gen_ai.response.model"); ok && !strings.HasSuffix(s.Name(), " "+m.String()) {
		fmt.Fprintf(&b, "  answered-by=%s", m.String())
	}
	if s.Status().Code == codes.Error {
		fmt.Fprintf(&b, "  %q", trunc.Cut(s.Status().Description, 80))
	}
	return b.String()
}
