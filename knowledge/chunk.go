package knowledge

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Default chunk sizes, in bytes of text: about 300 and 40 tokens of English.
const (
	DefaultChunkSize    = 1200
	DefaultChunkOverlap = 160
)

// A chunk is a passage of a document's text: the unit that is indexed,
// embedded and found.
type chunk struct {
	heading    string // the headings it sits under, "Install > Linux"
	start, end int    // byte offsets in the document's text
}

// A unit is a piece the chunker never cuts: a sentence, a line of code or a
// list item. Or it is a slice of one too long to fit a chunk.
type unit struct {
	start, end int
	paraStart  bool   // it begins a paragraph: a preferred place to cut
	heading    bool   // it is a heading line, which always begins a chunk
	section    string // the heading path it belongs to
}

// splitter cuts documents into chunks of at most size bytes. Each begins at a
// heading, a paragraph or a sentence. Within a section, each repeats up to
// overlap bytes of the end of the one before it.
type splitter struct{ size, overlap int }

func (s splitter) split(text string, markdown bool) []chunk {
	units := s.units(text, markdown)
	var chunks []chunk
	for i := 0; i < len(units); {
		first := i
		end := units[i].end
		i++
		lastPara := -1 // the last paragraph start after first, a cut to prefer
		for i < len(units) && !units[i].heading && units[i].section == units[first].section &&
			units[i].end-units[first].start <= s.size {
			if units[i].paraStart {
				lastPara = i
			}
			end = units[i].end
			i++
		}
		// Cut at the last paragraph when the chunk is full and that paragraph
		// starts in its second half. The next chunk then begins where the text
		// does.
		if i < len(units) && !units[i].heading && units[i].section == units[first].section &&
			!units[i].paraStart && lastPara > first && units[lastPara].start-units[first].start >= s.size/2 {
			i = lastPara
			end = units[i-1].end
		}
		// A heading with nothing under it before the next heading is no
		// passage. Its title lives on in the next section's heading path.
		if i == first+1 && units[first].heading && i < len(units) && units[i].heading {
			continue
		}
		chunks = append(chunks, chunk{heading: units[first].section, start: units[first].start, end: end})
		if i >= len(units) || units[i].heading || units[i].section != units[first].section {
			continue
		}
		// Overlap: start the next chunk with the last units of this one that
		// fit in s.overlap. Never start at the chunk's own first unit.
		back := i
		for back-1 > first && end-units[back-1].start <= s.overlap {
			back--
		}
		i = back
	}
	return chunks
}

// units splits text into paragraphs, separated by blank lines; a fenced code
// block is one. It splits paragraphs into sentences or lines, then anything
// longer than a chunk at spaces.
func (s splitter) units(text string, markdown bool) []unit {
	var (
		units   []unit
		path    []string // heading texts by level
		section string
		inFence string // the fence that opened the current code block
		para    = -1   // start of the current paragraph, -1 if none
		paraEnd int
	)
	flush := func() {
		if para >= 0 {
			units = s.appendParagraph(units, text, para, paraEnd, section, inFence != "")
		}
		para = -1
	}
	for pos := 0; pos < len(text); {
		eol := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if eol >= 0 {
			eol += pos
			next = eol + 1
		} else {
			eol = len(text)
		}
		line := text[pos:eol]
		trimmed := strings.TrimSpace(line)
		switch {
		case markdown && inFence != "":
			if strings.HasPrefix(trimmed, inFence) {
				paraEnd = eol
				flush()
				inFence = ""
			} else {
				paraEnd = eol
			}
		case markdown && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			flush()
			inFence = trimmed[:3]
			para, paraEnd = pos, eol
		case markdown && headingLevel(trimmed) > 0:
			flush()
			level := headingLevel(trimmed)
			title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trimmed[level:]), "#"))
			if len(path) >= level {
				path = path[:level-1]
			}
			for len(path) < level-1 {
				path = append(path, "")
			}
			path = append(path, title)
			section = joinPath(path)
			units = append(units, unit{start: pos, end: eol, paraStart: true, heading: true, section: section})
		case trimmed == "":
			flush()
		default:
			if para < 0 {
				para = pos
			}
			paraEnd = eol
		}
		pos = next
	}
	flush()
	return units
}

// headingLevel returns n for an ATX heading line "### Title" (n = 3), else 0.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ' && line[n] != '\t') {
		return 0
	}
	return n
}

func joinPath(path []string) string {
	var parts []string
	for _, p := range path {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " > ")
}

// appendParagraph adds the units of text[start:end]: its sentences, or, for
// code, its lines. Each is cut at spaces if longer than a chunk.
func (s splitter) appendParagraph(units []unit, text string, start, end int, section string, code bool) []unit {
	first := true
	add := func(a, b int) {
		for a < b && isSpace(text[a]) {
			a++
		}
		for b > a && isSpace(text[b-1]) {
			b--
		}
		if a == b {
			return
		}
		for a < b {
			cut := b
			if b-a > s.size {
				cut = cutAt(text, a, a+s.size)
			}
			units = append(units, unit{start: a, end: cut, paraStart: first, section: section})
			first = false
			a = cut
			for a < b && isSpace(text[a]) {
				a++
			}
		}
	}
	from := start
	for i := start; i < end; i++ {
		c := text[i]
		boundary := c == '\n' && (code || lineStartsItem(text, i+1, end))
		if !code && (c == '.' || c == '!' || c == '?') && i+1 < end && isSpace(text[i+1]) {
			boundary = true
		}
		if boundary {
			add(from, i+1)
			from = i + 1
		}
	}
	add(from, end)
	return units
}

// lineStartsItem reports whether the line at i begins a list item, a table row
// or a quote. Such a line reads as a sentence of its own.
func lineStartsItem(text string, i, end int) bool {
	for i < end && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if i >= end {
		return false
	}
	switch text[i] {
	case '-', '*', '+', '|', '>':
		return true
	}
	for j := i; j < end && j < i+4; j++ {
		if text[j] == '.' || text[j] == ')' {
			return j > i
		}
		if text[j] < '0' || text[j] > '9' {
			return false
		}
	}
	return false
}

// cutAt returns where to end a piece of text[a:] that must end by limit. That
// is at the last space after its middle, else at a rune boundary.
func cutAt(text string, a, limit int) int {
	for i := limit; i > a+(limit-a)/2; i-- {
		if isSpace(text[i-1]) {
			return i
		}
	}
	for limit > a && !utf8.RuneStart(text[limit]) {
		limit--
	}
	if limit == a { // a single rune longer than the limit: cannot happen for size ≥ 4
		_, n := utf8.DecodeRuneInString(text[a:])
		return a + n
	}
	return limit
}

func isSpace(c byte) bool { return c < utf8.RuneSelf && unicode.IsSpace(rune(c)) }
