package robby

import (
	"encoding/json"
	"strings"

	sjson "github.com/segmentio/encoding/json"
)

// A partialJSON reads a JSON object as it streams in, leniently: text
// before the object (prose, a code fence) is skipped, and at any moment
// the part received so far can be closed into a valid JSON value made of
// the fields that are complete. Each byte costs constant time, whatever
// the nesting or the size of the fragments; the text is kept once.
//
// It checks structure only (brackets, strings, where values end), not the
// grammar of numbers and literals: the closed prefix is decoded by a real
// decoder, and the whole answer is validated once it is complete.
type partialJSON struct {
	buf      []byte // the value's text so far, from its opening bracket
	n        int    // its length, counted even when buf is not kept
	stack    []byte // the containers open now: '{' or '['
	spanOnly bool   // find where the value ends; keep no text

	inString, escape bool
	isKey            bool // the string being read is an object's key
	inScalar         bool // a number or literal is being read
	expectKey        bool // in an object, the next string is a key

	// safe is the length of buf's prefix that ends just after the last
	// complete value inside the object; safeDepth is how many containers
	// are open at that point. Closing them gives valid JSON.
	safe, safeDepth int
	started, done   bool
	rescans         int // spans dropped for not being JSON
}

// write adds a fragment of text and reports whether it completed a field
// (a value inside the object) or the object itself. Braces in the prose
// before the object ("the format is {name}") make a span that is not
// JSON: it is dropped and the object looked for after it, at most
// maxRescans times, as extractJSON does; each byte is still read once.
func (p *partialJSON) write(frag string) (completed bool) {
	for i := 0; i < len(frag) && !p.done; i++ {
		if p.step(frag[i]) {
			completed = true
		}
		if p.done && !p.spanOnly && p.rescans < maxRescans && !json.Valid(p.buf) {
			*p = partialJSON{buf: p.buf[:0], stack: p.stack[:0], rescans: p.rescans + 1}
			completed = false
		}
	}
	return completed
}

// step reads one byte and reports whether it completed a value.
func (p *partialJSON) step(c byte) bool {
	if !p.started {
		if c != '{' {
			return false // text before the object
		}
		p.started = true
	}
	p.n++
	if !p.spanOnly {
		p.buf = append(p.buf, c)
	}
	if p.inString {
		switch {
		case p.escape:
			p.escape = false
		case c == '\\':
			p.escape = true
		case c == '"':
			p.inString = false
			if !p.isKey {
				return p.valueEnd(p.n)
			}
		}
		return false
	}
	completed := false
	if p.inScalar {
		if scalarByte(c) {
			return false
		}
		p.inScalar = false
		completed = p.valueEnd(p.n - 1)
		if p.done {
			return true
		}
	}
	switch c {
	case '{', '[':
		p.stack = append(p.stack, c)
		p.expectKey = c == '{'
	case '}', ']':
		if len(p.stack) > 0 {
			p.stack = p.stack[:len(p.stack)-1]
		}
		completed = p.valueEnd(p.n) || completed
	case '"':
		p.inString = true
		p.isKey = p.expectKey && len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{'
	case ',':
		p.expectKey = len(p.stack) > 0 && p.stack[len(p.stack)-1] == '{'
	case ':':
		p.expectKey = false
	case ' ', '\t', '\n', '\r':
	default:
		p.inScalar = true
	}
	return completed
}

// valueEnd records that a value ended at buf[:end].
func (p *partialJSON) valueEnd(end int) bool {
	p.expectKey = false
	p.safe, p.safeDepth = end, len(p.stack)
	if len(p.stack) == 0 {
		p.done = true
	}
	return true
}

// scalarByte reports whether c may continue a number or a literal.
func scalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-'
}

// extractJSON finds the JSON object in a reply written as text: the first
// balanced {...} that is valid JSON, after prose or inside a code fence.
// A span that is not valid JSON is searched again from its second byte,
// for an object written inside braces of prose, at most maxRescans times,
// so that the cost stays linear in the text's length.
func extractJSON(text string) ([]byte, bool) {
	span, ok, _ := extractJSONSteps(text)
	return span, ok
}

// extractJSONSteps is extractJSON, also counting the bytes it read.
func extractJSONSteps(text string) (span []byte, ok bool, steps int) {
	rescans := 0
	for rest := text; ; {
		start := strings.IndexByte(rest, '{')
		if start < 0 {
			return nil, false, steps
		}
		p := partialJSON{spanOnly: true}
		end := start
		for ; end < len(rest) && !p.done; end++ {
			p.step(rest[end])
			steps++
		}
		if !p.done {
			return nil, false, steps // unbalanced to the end
		}
		if span := []byte(rest[start:end]); json.Valid(span) {
			return span, true, steps
		}
		if rescans++; rescans <= maxRescans {
			rest = rest[start+1:]
		} else {
			rest = rest[end:]
		}
	}
}

// maxRescans bounds how many invalid spans extractJSON searches inside.
const maxRescans = 8

// closed returns the complete fields received so far as valid JSON (if the
// text is), or nil before the first field is complete. Containers open at
// that point are closed: a value since is not part of it until complete.
// It stays valid as long as the containers below safeDepth are: any that
// closes ends a value, which moves safe.
func (p *partialJSON) closed() []byte {
	if p.safe == 0 {
		return nil
	}
	b := make([]byte, 0, p.safe+p.safeDepth)
	b = append(b, p.buf[:p.safe]...)
	for i := p.safeDepth - 1; i >= 0; i-- {
		if p.stack[i] == '{' {
			b = append(b, '}')
		} else {
			b = append(b, ']')
		}
	}
	return b
}

// complete reports whether the whole value has arrived.
func (p *partialJSON) complete() bool { return p.done }

// A partialAnswer turns the text of an answer, as it streams in, into the
// answer's partial values.
type partialAnswer[T any] struct {
	p         partialJSON
	decodedAt int // the length of text last decoded
}

// add reads a piece of the text and returns the answer's complete fields
// when the piece completed more of them. Decoding costs the length of the
// text so far: it is done again only once the text has grown by an eighth
// (or is complete), which keeps the total cost linear.
func (pa *partialAnswer[T]) add(delta string) (T, bool) {
	var v T
	completed := pa.p.write(delta)
	if pa.p.safe < pa.decodedAt {
		pa.decodedAt = 0 // a span that was not the object was dropped
	}
	if !completed || pa.p.safe < pa.decodedAt+pa.decodedAt/8 && !pa.p.complete() {
		return v, false
	}
	pa.decodedAt = pa.p.safe
	if sjson.Unmarshal(pa.p.closed(), &v) != nil {
		return v, false // not of the answer's shape (yet)
	}
	return v, true
}
