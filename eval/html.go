package eval

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/robby-go/robby/internal/chattext"
)

//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":      func(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) },
	"num":      func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"messages": readMessages,
}).Parse(htmlSource))

// WriteHTML writes r as a page that needs nothing else: no script, no
// style or font from elsewhere. Each case shows its pass rate, and each
// failing run its reasons and conversation, folded. Everything the model
// or the dataset wrote is escaped.
func (r *Report) WriteHTML(w io.Writer) error {
	return htmlTemplate.Execute(w, r)
}

// A shownMessage is a message of a failing run as the page shows it.
type shownMessage struct {
	Role, Text string
	Calls      []string // tool calls: name(arguments)
}

// readMessages reads the chat-completions messages of a failure for the
// page; one it cannot read is shown as its JSON.
func readMessages(raws []json.RawMessage) []shownMessage {
	out := make([]shownMessage, 0, len(raws))
	for _, raw := range raws {
		var m chattext.Message
		if json.Unmarshal(raw, &m) != nil {
			out = append(out, shownMessage{Role: "?", Text: string(raw)})
			continue
		}
		sm := shownMessage{Role: m.Role, Text: contentText(m.Content)}
		for _, c := range m.ToolCalls {
			sm.Calls = append(sm.Calls, c.Function.Name+"("+c.Function.Arguments+")")
		}
		out = append(out, sm)
	}
	return out
}

// contentText is a message's content: a string, or its text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		} else {
			b.WriteString("[" + p.Type + "]")
		}
	}
	return b.String()
}
