package guardrail

import "bytes"

// What a [Holder] holds for its check.
const (
	HoldNone       = iota // no check: text goes as the redactors release it
	HoldParagraphs        // each paragraph, up to its blank line, is checked before its release
	HoldWhole             // the whole text is checked when it ends
)

// A Holder is what a streamed text passes before anyone reads it: its
// redactors in order, then a check of each paragraph or of the whole
// text, if any. A Holder is not safe for concurrent use.
type Holder struct {
	redactors []*Redactor
	hold      int
	// check returns the text to release in place of text, or an error:
	// the text is blocked.
	check func(text string) (string, error)
	held  []byte // released by the redactors, waiting for the check
	out   []byte
	tmp   []byte
	all   bytes.Buffer // all it released
}

// NewHolder returns a holder of the redactors and a check held as hold
// says. check may be nil with HoldNone.
func NewHolder(redactors []*Redactor, hold int, check func(string) (string, error)) *Holder {
	return &Holder{redactors: redactors, hold: hold, check: check}
}

// Write takes the next piece of text and returns what may be released.
func (h *Holder) Write(text string) (string, error) {
	return h.pass(text, false)
}

// Close returns the rest of the text, once the whole has passed: the text
// has ended.
func (h *Holder) Close() (string, error) {
	return h.pass("", true)
}

// Released returns all the text released so far.
func (h *Holder) Released() string { return h.all.String() }

// Redactions returns how many spans its redactors replaced.
func (h *Holder) Redactions() int {
	n := 0
	for _, r := range h.redactors {
		n += r.Count()
	}
	return n
}

func (h *Holder) pass(text string, final bool) (string, error) {
	h.out = append(h.out[:0], text...)
	for _, r := range h.redactors {
		h.tmp = r.Write(h.tmp[:0], h.out)
		if final {
			h.tmp = r.Flush(h.tmp)
		}
		h.out, h.tmp = h.tmp, h.out
	}
	switch h.hold {
	case HoldWhole:
		h.held = append(h.held, h.out...)
		if !final {
			return "", nil
		}
		return h.checked(len(h.held))
	case HoldParagraphs:
		h.held = append(h.held, h.out...)
		end := bytes.LastIndex(h.held, []byte("\n\n"))
		if final {
			return h.checked(len(h.held))
		}
		if end < 0 {
			return "", nil
		}
		return h.checked(end + 2)
	}
	return h.release(h.out), nil
}

// checked checks the first n bytes held, and releases what the check
// returns. Paragraphs are checked one by one.
func (h *Holder) checked(n int) (string, error) {
	var done []byte
	rest := h.held[:n]
	for len(rest) > 0 {
		end := len(rest)
		if h.hold == HoldParagraphs {
			if i := bytes.Index(rest, []byte("\n\n")); i >= 0 {
				end = i + 2
			}
		}
		passed, err := h.check(string(rest[:end]))
		if err != nil {
			h.held = h.held[:0]
			return h.release(done), err
		}
		done = append(done, passed...)
		rest = rest[end:]
	}
	h.held = append(h.held[:0], h.held[n:]...)
	return h.release(done), nil
}

func (h *Holder) release(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	h.all.Write(b)
	return string(b)
}
