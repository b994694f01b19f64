package a2atool

import (
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// maxAnswer bounds the text a call keeps of a remote agent's answer, which
// the remote agent controls. The rest is cut, and the answer says so.
const maxAnswer = 1 << 20

// A task is what a call has heard of the task its message started: the
// events of its stream, taken in order.
type task struct {
	id       a2a.TaskID
	state    a2a.TaskState
	status   string // the text of the last status message
	message  string // the agent's answer, when it answered with a message
	answered bool

	artifacts []*strings.Builder     // the text of each artifact, in order
	byID      map[a2a.ArtifactID]int // index in artifacts
	size      int                    // of artifacts, in bytes
	cut       bool                   // past maxAnswer
}

// add takes in an event. It returns the text of a status update, which the
// caller passes on as progress, and the text an artifact update added to
// the answer, which the caller passes on as the agent's text.
func (t *task) add(ev a2a.Event) (status, added string) {
	switch e := ev.(type) {
	case *a2a.Message:
		t.message, t.answered = t.keep(text(e.Parts)), true
	case *a2a.Task:
		t.id, t.state = e.ID, e.Status.State
		t.artifacts, t.byID, t.size = nil, nil, 0
		for _, a := range e.Artifacts {
			t.artifact(a, false)
		}
		t.setStatus(e.Status)
	case *a2a.TaskStatusUpdateEvent:
		t.id, t.state = e.TaskID, e.Status.State
		return t.setStatus(e.Status), ""
	case *a2a.TaskArtifactUpdateEvent:
		t.id = e.TaskID
		if e.Artifact != nil {
			return "", t.artifact(e.Artifact, e.Append)
		}
	}
	return "", ""
}

// setStatus keeps the text of a status's message, and returns it.
func (t *task) setStatus(s a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	t.status = t.keep(text(s.Message.Parts))
	return t.status
}

// artifact takes in an artifact, or more of one already sent. It returns
// the text it added: all of a new artifact's, the piece appended to one, or
// what a rewrite of one added to its text. A rewrite that changes what was
// told adds nothing: the result still has it.
func (t *task) artifact(a *a2a.Artifact, more bool) string {
	if t.byID == nil {
		t.byID = map[a2a.ArtifactID]int{}
	}
	i, ok := t.byID[a.ID]
	var told string
	if !ok {
		i = len(t.artifacts)
		t.byID[a.ID] = i
		t.artifacts = append(t.artifacts, &strings.Builder{})
	} else if !more {
		told = t.artifacts[i].String()
		t.size -= len(told)
		t.artifacts[i].Reset()
	}
	s := t.keep(text(a.Parts))
	if room := maxAnswer - t.size; len(s) > room {
		s, t.cut = s[:max(room, 0)], true
	}
	t.artifacts[i].WriteString(s)
	t.size += len(s)
	if added, ok := strings.CutPrefix(s, told); ok {
		return added
	}
	return ""
}

// keep bounds a text the remote agent sent.
func (t *task) keep(s string) string {
	if len(s) > maxAnswer {
		s, t.cut = s[:maxAnswer], true
	}
	return s
}

// done reports a task the call need not wait for any longer: it ended, or
// it waits for what a tool call cannot give.
func (t *task) done() bool {
	return t.answered || t.state.Terminal() || t.state == a2a.TaskStateInputRequired ||
		t.state == a2a.TaskStateAuthRequired
}

// result returns the answer of a task that completed, or why there is none.
func (t *task) result() (string, error) {
	answer := t.message
	switch t.state {
	case a2a.TaskStateCompleted, a2a.TaskStateUnspecified:
		if !t.answered && t.state == a2a.TaskStateUnspecified {
			return "", fmt.Errorf("the stream ended before the task did")
		}
		if !t.answered {
			texts := make([]string, len(t.artifacts))
			for i, a := range t.artifacts {
				texts[i] = a.String()
			}
			answer = strings.Join(texts, "\n")
			if answer == "" {
				answer = t.status
			}
		}
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled:
		return "", fmt.Errorf("the task ended %s: %s", word(t.state), t.said())
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		return "", fmt.Errorf("the agent asks for %s, which a tool call cannot give: %s", word(t.state), t.said())
	default:
		return "", fmt.Errorf("the stream ended before the task did (it is %s)", word(t.state))
	}
	if answer == "" {
		return "", errNoAnswer
	}
	if t.cut {
		answer += fmt.Sprintf("\n[the answer was cut at %d bytes]", maxAnswer)
	}
	return answer, nil
}

// said is the last thing the task's status said, or that it said nothing.
func (t *task) said() string {
	if t.status == "" {
		return "(no message)"
	}
	return t.status
}

// word names a task state plainly: "input required" for
// TASK_STATE_INPUT_REQUIRED.
func word(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(s.String(), "TASK_STATE_")), "_", " ")
}

// text joins the text of parts. Parts of other kinds (files, data) are
// named, not given.
func text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if p == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if s, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(s))
		} else {
			fmt.Fprintf(&b, "[a %T part]", p.Content)
		}
	}
	return b.String()
}
