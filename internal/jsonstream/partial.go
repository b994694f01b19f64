package jsonstream

import (
	"strings"

	sjson "github.com/segmentio/encoding/json"
)

// A Partial reads a JSON object as it streams in, leniently. Text before the
// object (prose, a code fence) is skipped. At any moment, the part received so
// far closes into valid JSON made of the fields that are complete. The text is
// kept once, from the object's opening brace.
type Partial struct {
	buf  []byte // the value's text so far, from its opening bracket
	scan Scanner

	// safe is the length of buf's prefix that ends just after the last complete
	// value inside the object. safeDepth is how many containers are open at
	// that point. Closing them gives valid JSON.
	safe, safeDepth int
	started         bool
	rescans         int // spans dropped for not being JSON
}

// MaxRescans bounds how many spans that are not JSON a search looks inside. Its
// cost so stays linear in the text's length.
const MaxRescans = 8

// Write adds a fragment of text. It reports whether the fragment completed a
// field (a value inside the object) or the object itself. Braces in the prose
// before the object ("the format is {name}") start a span that is not JSON.
// That span is searched again from its second byte, as [Extract] does, at most
// [MaxRescans] times.
func (p *Partial) Write(frag string) (completed bool) {
	for i := 0; i < len(frag) && !p.scan.Done(); i++ {
		if p.step(frag[i]) {
			completed = true
		}
	}
	return completed
}

// step reads one byte and reports whether it completed a value.
func (p *Partial) step(c byte) bool {
	if !p.started {
		if c != '{' {
			return false // text before the object
		}
		p.started = true
	}
	if p.scan.broken {
		return false // past MaxRescans
	}
	p.buf = append(p.buf, c)
	p.scan.Step(c)
	switch {
	case p.scan.broken:
		return p.rescan()
	case p.scan.ended&endedWith != 0:
		p.safe, p.safeDepth = len(p.buf), len(p.scan.stack)
	case p.scan.ended&endedBefore != 0:
		p.safe, p.safeDepth = len(p.buf)-1, len(p.scan.stack)
	default:
		return false
	}
	return true
}

// rescan drops a span that is not JSON and reads it again from its
// second byte.
func (p *Partial) rescan() bool {
	if p.rescans == MaxRescans {
		p.safe = 0
		return false
	}
	again := strings.Clone(string(p.buf[1:]))
	*p = Partial{buf: p.buf[:0], scan: Scanner{stack: p.scan.stack[:0]}, rescans: p.rescans + 1}
	completed := false
	for i := 0; i < len(again) && !p.scan.Done(); i++ {
		if p.step(again[i]) {
			completed = true
		}
	}
	return completed
}

// Closed returns the complete fields received so far as valid JSON, or nil
// before the first field is complete. Containers open at that point are closed.
// A value since is not part of it until complete. It stays valid as long as the
// containers below safeDepth are. Any that closes ends a value, which moves
// safe.
func (p *Partial) Closed() []byte {
	if p.safe == 0 {
		return nil
	}
	b := make([]byte, 0, p.safe+p.safeDepth)
	b = append(b, p.buf[:p.safe]...)
	for i := p.safeDepth - 1; i >= 0; i-- {
		if p.scan.stack[i] == '{' {
			b = append(b, '}')
		} else {
			b = append(b, ']')
		}
	}
	return b
}

// Complete reports whether the whole value has arrived.
func (p *Partial) Complete() bool { return p.scan.Done() }

// Text returns the value's text so far, from its opening brace.
func (p *Partial) Text() []byte { return p.buf }

// Extract finds the JSON object in a reply written as text. It is the first
// balanced {...} that is valid JSON, after prose or inside a code fence. A span
// that is not JSON is searched again from its second byte, at most [MaxRescans]
// times. It may hold an object written inside braces of prose.
func Extract(text string) ([]byte, bool) {
	span, ok, _ := ExtractSteps(text)
	return span, ok
}

// ExtractSteps is [Extract], also counting the bytes it read.
func ExtractSteps(text string) (span []byte, ok bool, steps int) {
	rescans := 0
	for rest := text; ; {
		start := strings.IndexByte(rest, '{')
		if start < 0 {
			return nil, false, steps
		}
		var s Scanner
		end := start
		for ; end < len(rest) && !s.Done() && !s.broken; end++ {
			s.Step(rest[end])
			steps++
		}
		switch {
		case s.Done():
			return []byte(rest[start:end]), true, steps
		case !s.broken:
			return nil, false, steps // unbalanced to the end
		}
		if rescans++; rescans <= MaxRescans {
			rest = rest[start+1:]
		} else {
			rest = rest[end:]
		}
	}
}

// An Answer turns the text of an answer, as it streams in, into the
// answer's partial values.
type Answer[T any] struct {
	p         Partial
	decodedAt int // the length of text last decoded
}

// Add reads a piece of the text. When the piece completed more of the answer's
// fields, it returns them. Decoding costs the length of the text so far. So it
// is done again only once the text has grown by an eighth (or is complete),
// which keeps the total cost linear.
func (pa *Answer[T]) Add(delta string) (T, bool) {
	var v T
	completed := pa.p.Write(delta)
	if pa.p.safe < pa.decodedAt {
		pa.decodedAt = 0 // a span that was not the object was dropped
	}
	if !completed || pa.p.safe < pa.decodedAt+pa.decodedAt/8 && !pa.p.Complete() {
		return v, false
	}
	pa.decodedAt = pa.p.safe
	if sjson.Unmarshal(pa.p.Closed(), &v) != nil {
		return v, false // not of the answer's shape (yet)
	}
	return v, true
}
