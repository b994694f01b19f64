package knowledge

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const guide = `# Guide

Robby is a library. It runs agents.

## Install

Run go get. Then import the package.

` + "```sh\ngo get github.com/robby-go/robby\n\n# a comment, not a heading\n```" + `

## Use

### Tools

Tools are functions.

- one item
- two items
`

func TestSplitKeepsHeadingsAndPositions(t *testing.T) {
	chunks := splitter{size: 1200, overlap: 100}.split(guide, true)
	var headings []string
	for _, c := range chunks {
		headings = append(headings, c.heading)
		text := guide[c.start:c.end]
		assert.Equal(t, strings.TrimSpace(text), text, "a chunk starts and ends on text")
	}
	assert.Equal(t, []string{"Guide", "Guide > Install", "Guide > Use > Tools"}, headings, "a heading with nothing under it is no chunk")
	install := guide[chunks[1].start:chunks[1].end]
	assert.True(t, strings.HasPrefix(install, "## Install"))
	assert.Contains(t, install, "# a comment, not a heading", "a code block is not cut at a # line")
	assert.Equal(t, "Guide", markdownTitle(guide))
}

func TestSplitBoundsSizeWithOverlap(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Long\n\n")
	for p := range 12 {
		for s := range 6 {
			b.WriteString("Paragraph " + string(rune('A'+p)) + " sentence " + string(rune('a'+s)) + " says something useful here. ")
		}
		b.WriteString("\n\n")
	}
	text := b.String()
	sp := splitter{size: 400, overlap: 120}
	chunks := sp.split(text, true)
	require.Greater(t, len(chunks), 5)
	overlaps := 0
	for i, c := range chunks {
		assert.LessOrEqual(t, c.end-c.start, sp.size, "chunk %d", i)
		if i > 0 {
			prev := chunks[i-1]
			assert.Greater(t, c.start, prev.start, "chunks advance")
			assert.GreaterOrEqual(t, c.start, prev.end-sp.overlap, "overlap is bounded")
			if c.start < prev.end {
				overlaps++
			}
		}
	}
	assert.Greater(t, overlaps, 0, "chunks cut inside a paragraph repeat the end of the one before")
	assert.Equal(t, len(strings.TrimSpace(text)), chunks[len(chunks)-1].end, "the whole text is covered")
}

func TestSplitCutsAWordlessRun(t *testing.T) {
	text := strings.Repeat("é", 1000) // 2,000 bytes with no space
	chunks := splitter{size: 300, overlap: 0}.split(text, false)
	total := 0
	for _, c := range chunks {
		assert.LessOrEqual(t, c.end-c.start, 300)
		assert.True(t, strings.HasPrefix(text[c.start:], "é"), "cut at a rune boundary")
		total += c.end - c.start
	}
	assert.Equal(t, len(text), total)
}

func TestHTMLText(t *testing.T) {
	page := `<!doctype html><html><head><title>Robby docs</title><style>p{color:red}</style>
<script>var secret = 1;</script></head><body><nav><a href="/">Home</a></nav>
<h1>Getting   started</h1><p>Robby runs <b>agents</b>
in Go.</p><ul><li>fast</li><li>small</li></ul><pre>go run .
  indented</pre><h2>Tools</h2><p>Tools are functions.</p></body></html>`
	text, title, err := htmlText(page)
	require.NoError(t, err)
	assert.Equal(t, "Robby docs", title)
	assert.Equal(t, "# Getting started\n\nRobby runs agents in Go.\n\n- fast\n- small\n\n```\ngo run .\n  indented\n```\n\n## Tools\n\nTools are functions.", text)
	assert.NotContains(t, text, "secret")
	assert.NotContains(t, text, "Home")
}
