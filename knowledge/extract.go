package knowledge

import (
	"path/filepath"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A Format says how a document's text is read.
type Format string

// The formats a document may have. Markdown headings and paragraphs guide the
// chunking. HTML is turned into Markdown-like text first: headings kept,
// scripts, styles and navigation dropped. Plain text is cut at paragraphs and
// sentences.
const (
	Text     Format = "text"
	Markdown Format = "markdown"
	HTML     Format = "html"
)

// FormatOf returns the format of a file by its extension. It is Markdown for
// .md, .markdown and .mdx, HTML for .html and .htm, and Text for .txt and
// .text. It is "" for any other file, which [Base.AddDir] skips.
func FormatOf(path string) Format {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".md", ".markdown", ".mdx":
		return Markdown
	case ".html", ".htm":
		return HTML
	case ".txt", ".text":
		return Text
	}
	return ""
}

// htmlText turns an HTML page into Markdown-like text and returns it with
// the page's title.
func htmlText(page string) (text, title string, err error) {
	root, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return "", "", err
	}
	w := &htmlWriter{}
	w.walk(root)
	return w.text(), strings.TrimSpace(w.title), nil
}

// htmlWriter accumulates the text of a parsed page. Paragraphs are separated by
// blank lines, headings written as "## Title", list items as "- item".
type htmlWriter struct {
	b     strings.Builder
	title string
	pre   int // depth of <pre> elements
}

// skipped elements hold no text a reader sees, or only navigation.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Nav: true, atom.Head: true, atom.Iframe: true, atom.Object: true,
}

var headings = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}

// blocks are elements that end a paragraph.
var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true, atom.Header: true,
	atom.Footer: true, atom.Aside: true, atom.Blockquote: true, atom.Ul: true, atom.Ol: true, atom.Dl: true,
	atom.Table: true, atom.Tr: true, atom.Form: true, atom.Figure: true, atom.Hr: true, atom.Dt: true, atom.Dd: true,
	atom.Body: true, atom.Details: true, atom.Summary: true,
}

func (w *htmlWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		if w.pre > 0 {
			w.b.WriteString(n.Data)
		} else {
			w.inline(n.Data)
		}
		return
	case html.ElementNode:
		if n.DataAtom == atom.Head {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.DataAtom == atom.Title {
					w.title = nodeText(c)
				}
			}
		}
		if skipped[n.DataAtom] {
			return
		}
		if level, ok := headings[n.DataAtom]; ok {
			t := strings.Join(strings.Fields(nodeText(n)), " ")
			if t != "" {
				w.paragraph()
				w.b.WriteString(strings.Repeat("#", level) + " " + t)
				w.paragraph()
			}
			if strings.TrimSpace(w.title) == "" && level == 1 {
				w.title = t
			}
			return
		}
		switch n.DataAtom {
		case atom.Br:
			w.b.WriteString("\n")
			return
		case atom.Li:
			w.line()
			w.b.WriteString("- ")
		case atom.Td, atom.Th:
			w.b.WriteString(" ")
		case atom.Pre:
			w.paragraph()
			w.b.WriteString("```\n")
			w.pre++
			defer func() {
				w.pre--
				w.line()
				w.b.WriteString("```")
				w.paragraph()
			}()
		}
		if blocks[n.DataAtom] {
			w.paragraph()
			defer w.paragraph()
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// inline writes text with its runs of white space made one space.
func (w *htmlWriter) inline(s string) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" && !w.atLineStart() {
			w.b.WriteByte(' ')
		}
		return
	}
	if isSpace(s[0]) && !w.atLineStart() {
		w.b.WriteByte(' ')
	}
	w.b.WriteString(strings.Join(fields, " "))
	if isSpace(s[len(s)-1]) {
		w.b.WriteByte(' ')
	}
}

func (w *htmlWriter) atLineStart() bool {
	s := w.b.String()
	return s == "" || s[len(s)-1] == '\n' || s[len(s)-1] == ' '
}

func (w *htmlWriter) line() {
	if s := w.b.String(); s != "" && s[len(s)-1] != '\n' {
		w.b.WriteByte('\n')
	}
}

func (w *htmlWriter) paragraph() {
	w.line()
	if s := w.b.String(); s != "" && !strings.HasSuffix(s, "\n\n") {
		w.b.WriteByte('\n')
	}
}

// text returns the written text with trailing spaces cut from its lines
// and no more than one blank line in a row.
func (w *htmlWriter) text() string {
	lines := strings.Split(w.b.String(), "\n")
	var out []string
	blank := true
	inPre := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			inPre = !inPre
		}
		if !inPre {
			l = strings.TrimSpace(l)
		}
		if l == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// markdownTitle returns the text of the first level-1 heading, if any.
func markdownTitle(text string) string {
	fence := false
	for line := range strings.Lines(text) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		if !fence && headingLevel(t) == 1 {
			return strings.TrimSpace(strings.TrimRight(t[1:], "#"))
		}
	}
	return ""
}
