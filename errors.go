package robby

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/robby-go/robby/internal/chatwire"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// Conditions a caller may test with [errors.Is].
var (
	// ErrMaxTurns ends a run that used all its turns while the model still
	// asked for tools. The run's partial [Result] comes with it.
	ErrMaxTurns = errors.New("robby: turn limit reached")

	// ErrBudget ends a run that reached a limit of its [Budget]
	// ([WithBudget]). The error is a [*BudgetError] saying which. The run's
	// partial [Result] comes with it.
	ErrBudget = errors.New("robby: budget reached")

	// ErrIncompleteStream reports a streamed reply that ended without a
	// finish reason. The connection closed or the provider gave up midway.
	ErrIncompleteStream = errors.New("robby: stream ended before the reply was complete")

	// ErrNilContext is the error of a method called with a nil
	// context.Context: pass context.Background() or context.TODO().
	ErrNilContext = errors.New("robby: nil context (pass context.Background() or context.TODO())")

	// errNilAgent is the error of a function given a nil *Agent.
	errNilAgent = errors.New("robby: nil *Agent")

	// ErrNoChoices reports a reply that carried no message at all.
	ErrNoChoices = errors.New("robby: reply has no choices")

	// ErrUnknownTool is the error of a call to a tool the agent does not have.
	ErrUnknownTool = errors.New("robby: unknown tool")

	// ErrDeferredTool is the error of a call to a deferred tool
	// ([Tool.Deferred]) that no search of the conversation found.
	ErrDeferredTool = errors.New("robby: deferred tool not found by " + SearchToolsName + " yet")

	// ErrInvalidArguments is the error of a call whose arguments are not
	// valid JSON or do not fit the tool's schema.
	ErrInvalidArguments = errors.New("robby: invalid tool arguments")

	// ErrToolLimit is the error of a call that was not run. The turn asked
	// for more calls than [WithMaxToolCallsPerTurn] allows.
	ErrToolLimit = errors.New("robby: too many tool calls in one turn")

	// ErrToolPanic is the error of a tool that panicked. The panic is
	// recovered and the agent goes on.
	ErrToolPanic = errors.New("robby: tool panicked")

	// ErrNotApproved is the error of a call the [WithApproval] callback
	// refused.
	ErrNotApproved = errors.New("robby: tool call not approved")
)

// An APIError is an error answer from the chat-completions endpoint. It may
// also be an error the provider sent in the middle of a stream. Its Message
// is the provider's own text, whatever the shape of the body it came in. It
// wraps the [*openai.Error] (reachable with [errors.As]) when there is one.
type APIError struct {
	StatusCode int    // HTTP status; 0 for an error sent inside a stream
	Message    string // the provider's message, or the body's text
	body       []byte // the error body, to recognise context-length errors
	err        error
}

// Error says the status and the provider's message.
func (e *APIError) Error() string {
	if e.StatusCode == 0 {
		return "robby: endpoint error in stream: " + e.Message
	}
	status := fmt.Sprintf("%d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message == "" {
		return "robby: endpoint returned " + strings.TrimSpace(status)
	}
	return fmt.Sprintf("robby: endpoint returned %s: %s", strings.TrimSpace(status), e.Message)
}

// Unwrap returns the [*openai.Error] or stream error it came from.
func (e *APIError) Unwrap() error { return e.err }

// endpointError turns what openai-go returned into an *APIError carrying the
// provider's message. It returns err as it is for other failures (network,
// context).
func endpointError(err error, c *chatwire.Capture) error {
	var oe *openai.Error
	isOE := errors.As(err, &oe)
	var se *ssestream.StreamError
	switch {
	case errors.As(err, &se):
		return &APIError{Message: chatwire.ProviderMessage([]byte(se.Event.Data)), body: se.Event.Data, err: err}
	case c.Status != 0:
		if !isOE {
			// openai-go could not even decode the body. Give callers the
			// *openai.Error it would have built.
			oe = &openai.Error{StatusCode: c.Status, Request: c.Req, Response: c.Res}
		}
		oe.Message = chatwire.ProviderMessage(c.Body)
		return &APIError{StatusCode: c.Status, Message: oe.Message, body: c.Body, err: oe}
	case isOE:
		return &APIError{StatusCode: oe.StatusCode, Message: oe.Message, err: oe}
	}
	return err
}

// ErrContextLength reports a request that does not fit the model's
// context window, even after compaction. The error is a
// [*ContextLengthError].
var ErrContextLength = errors.New("robby: the request does not fit the model's context window")

// A ContextLengthError is a provider's context-length error that compaction
// did not cure. Either the agent has no [WithCompaction] policy, or the
// request sent again after compacting was still refused. It matches
// [ErrContextLength] and wraps the provider's [*APIError].
type ContextLengthError struct {
	Budget    int // the tokens robby fitted the request into; 0 without compaction or a known window
	Window    int // the model's context window, as the provider or WithContextWindow says; 0 if unknown
	Tokens    int // the request's tokens as the provider counted them; 0 if it did not say
	Estimated int // the request's tokens as robby estimated them; 0 without compaction
	err       error
}

// Error names the sizes known.
func (e *ContextLengthError) Error() string {
	var b strings.Builder
	b.WriteString("robby: the request does not fit the model's context window")
	var sizes []string
	if e.Tokens > 0 {
		sizes = append(sizes, fmt.Sprintf("%d tokens sent", e.Tokens))
	}
	if e.Estimated > 0 {
		sizes = append(sizes, fmt.Sprintf("%d by robby's estimate", e.Estimated))
	}
	if e.Budget > 0 {
		sizes = append(sizes, fmt.Sprintf("budget %d", e.Budget))
	}
	if e.Window > 0 {
		sizes = append(sizes, fmt.Sprintf("window %d", e.Window))
	}
	if len(sizes) > 0 {
		b.WriteString(" (" + strings.Join(sizes, ", ") + ")")
	}
	if e.err != nil {
		b.WriteString(": " + e.err.Error())
	}
	return b.String()
}

// Unwrap returns [ErrContextLength] and the provider's error.
func (e *ContextLengthError) Unwrap() []error { return []error{ErrContextLength, e.err} }
