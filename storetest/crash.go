package storetest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
)

// Environment of a child process of [Crash].
const (
	crashStoreEnv = "ROBBY_STORETEST_CRASH_STORE"
	crashModelEnv = "ROBBY_STORETEST_CRASH_MODEL"
	crashConvEnv  = "ROBBY_STORETEST_CRASH_CONVERSATION"
)

// killsAConversation is how many kills a conversation takes before the
// next one starts, so that none grows without bound.
const killsAConversation = 20

// CrashReport is what [Crash] measured.
type CrashReport struct {
	Kills        int            // processes killed
	Inconsistent int            // checks that found a conversation not as it should be
	LateWrites   int            // resumptions that met a write of the killed process landing after its death
	States       map[string]int // what each kill left at the end of the conversation
	Messages     int64          // sum of the conversations' lengths after each check
}

// Crash runs an agent bound to a stored conversation ([robby.WithConversation])
// in a child process. The child is the test binary run again, the test named t.
// Crash kills it with SIGKILL at a random point of its runs, and checks the
// conversation. It kills kills times, all on one conversation.
//
// After each kill the stored conversation must load. It must hold each prompt,
// each tool call and each tool result at most once. Each assistant message must
// have the usage of its call. The conversation must have the sum of its
// messages' usage ([robby.Conversation.Usage]). The parent then runs on it,
// which finishes the interrupted calls: the idempotent tool runs again, the
// other is reported interrupted. After that run, the conversation must be valid
// for a provider. Each tool call is answered by exactly one result that follows
// its assistant message.
//
// create returns where a new, empty store is (a file, a database URL), in the
// parent only. open opens the store there, in the parent and in the child. The
// test calling Crash must do nothing else before it in the child.
func Crash(t *testing.T, kills int, create func(t *testing.T) string, open func(t *testing.T, where string) robby.Store) CrashReport {
	if where := os.Getenv(crashStoreEnv); where != "" {
		crashChild(t, open(t, where), os.Getenv(crashModelEnv), os.Getenv(crashConvEnv))
		return CrashReport{}
	}
	where := create(t)
	store := open(t, where)
	model := robbytest.NewServer()
	defer model.Close()
	agent := crashAgent(t, model.URL)
	rep := CrashReport{States: map[string]int{}}
	ctx := context.Background()
	for i := range kills {
		conv := fmt.Sprintf("c%d", i/killsAConversation)
		model.Reply(crashReplies(100)...)
		cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v=false")
		cmd.Env = append(os.Environ(), crashStoreEnv+"="+where, crashModelEnv+"="+model.URL, crashConvEnv+"="+conv)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		ready, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || ready != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %d did not start: %q, %v", i, ready, err)
		}
		time.Sleep(time.Duration(mathrand.Int64N(int64(20 * time.Millisecond))))
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		rep.Kills++

		c, msgs, err := store.Load(ctx, "crash", conv)
		switch {
		case errors.Is(err, robby.ErrNoConversation):
			rep.States["before creating the conversation"]++
		case err != nil:
			t.Fatal(err)
		default:
			rep.States[lastState(t, msgs)]++
			if err := errors.Join(checkOnce(msgs), checkUsage(c, msgs)); err != nil {
				rep.Inconsistent++
				t.Errorf("kill %d: %v", i, err)
			}
		}
		// Resume: the parent finishes what the kill interrupted. A write the
		// child sent before it died may still land (a database server finishes
		// it). The parent's run then meets ErrConflict, having saved nothing,
		// and starts again.
		model.Reply(crashReplies(10)...)
		for attempt := 0; ; attempt++ {
			_, err := agent.Run(ctx, fmt.Sprintf("check %d", i), robby.WithConversation(store, "crash", conv))
			if err == nil {
				break
			}
			if !errors.Is(err, robby.ErrConflict) || attempt == 100 {
				t.Fatalf("kill %d: resuming: %v", i, err)
			}
			rep.LateWrites++
			time.Sleep(10 * time.Millisecond)
		}
		c, msgs, err = store.Load(ctx, "crash", conv)
		require.NoError(t, err)
		if err := errors.Join(checkValid(msgs), checkUsage(c, msgs)); err != nil {
			rep.Inconsistent++
			t.Errorf("kill %d, after resuming: %v", i, err)
		}
		rep.Messages += int64(len(msgs))
	}
	t.Logf("%d kills, %d inconsistent conversations, %d late writes met, %d messages checked; the kills left: %v",
		rep.Kills, rep.Inconsistent, rep.LateWrites, rep.Messages, rep.States)
	return rep
}

// runPattern returns the -test.run pattern of exactly the test named name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

type crashArgs struct {
	N int `json:"n"`
}

// crashAgent has a tool safe to repeat and one that is not, both slow
// enough for kills to land while they run.
func crashAgent(t *testing.T, url string) *robby.Agent {
	pause := func() { time.Sleep(time.Duration(mathrand.Int64N(int64(3 * time.Millisecond)))) }
	lookup := robby.NewTool("lookup", "Look something up", func(ctx context.Context, in crashArgs) (int, error) {
		pause()
		return in.N * 2, nil
	}).Idempotent()
	send := robby.NewTool("send", "Send something", func(ctx context.Context, in crashArgs) (string, error) {
		pause()
		return fmt.Sprintf("sent %d", in.N), nil
	})
	agent, err := robby.New(robby.WithBaseURL(url), robby.WithAPIKey("test"), robby.WithModel("m"), robby.WithTools(lookup, send))
	require.NoError(t, err)
	t.Cleanup(func() { agent.Close() })
	return agent
}

// crashReplies are the model's: tool calls after a prompt, an answer after
// tool results.
func crashReplies(n int) []robbytest.Reply {
	replies := make([]robbytest.Reply, n)
	for i := range replies {
		replies[i] = robbytest.Func(func(req robbytest.Request) robbytest.Reply {
			if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
				return robbytest.Text("done")
			}
			id := rand.Text()
			return robbytest.ToolCalls(
				robbytest.ToolCall{ID: "call_l" + id, Name: "lookup", Arguments: `{"n":1}`},
				robbytest.ToolCall{ID: "call_s" + id, Name: "send", Arguments: `{"n":2}`},
				robbytest.ToolCall{ID: "call_t" + id, Name: "lookup", Arguments: `{"n":3}`})
		})
	}
	return replies
}

// crashChild runs prompts until it is killed.
func crashChild(t *testing.T, store robby.Store, url, conv string) {
	agent := crashAgent(t, url)
	fmt.Println("ready")
	prefix := rand.Text()
	for i := 0; ; i++ {
		_, err := agent.Run(context.Background(), fmt.Sprintf("prompt %s-%d", prefix, i), robby.WithConversation(store, "crash", conv))
		require.NoError(t, err)
	}
}

// crashMessage is what the checks read of a stored message.
type crashMessage struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

func decode(msgs []robby.Message) ([]crashMessage, error) {
	out := make([]crashMessage, 0, len(msgs))
	for _, m := range msgs {
		if m.Chat == nil {
			return nil, fmt.Errorf("message %d: an error record: %s", m.Seq, m.Error)
		}
		var cm crashMessage
		if err := json.Unmarshal(m.Chat, &cm); err != nil {
			return nil, fmt.Errorf("message %d: %w", m.Seq, err)
		}
		out = append(out, cm)
	}
	return out, nil
}

// lastState names where the conversation was cut.
func lastState(t *testing.T, msgs []robby.Message) string {
	ms, err := decode(msgs)
	require.NoError(t, err)
	if len(ms) == 0 {
		return "empty"
	}
	switch last := ms[len(ms)-1]; {
	case last.Role == "user":
		return "after a prompt"
	case last.Role == "assistant" && len(last.ToolCalls) > 0:
		return "after tool calls, no result"
	case last.Role == "tool":
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Role == "assistant" {
				if len(ms)-1-i < len(ms[i].ToolCalls) {
					return "between tool results"
				}
				return "after all tool results"
			}
		}
	case last.Role == "assistant":
		return "after an answer"
	}
	return "other"
}

// checkOnce reports a prompt, a call or a result stored twice, or a
// result of no call made before it.
func checkOnce(msgs []robby.Message) error {
	ms, err := decode(msgs)
	if err != nil {
		return err
	}
	prompts, calls, results := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, m := range ms {
		switch m.Role {
		case "user":
			p := fmt.Sprint(m.Content)
			if prompts[p] {
				return fmt.Errorf("message %d: prompt %q twice", i+1, p)
			}
			prompts[p] = true
		case "assistant":
			for _, c := range m.ToolCalls {
				if calls[c.ID] {
					return fmt.Errorf("message %d: call %s twice", i+1, c.ID)
				}
				calls[c.ID] = true
			}
		case "tool":
			if !calls[m.ToolCallID] || results[m.ToolCallID] {
				return fmt.Errorf("message %d: result of %s without its call or twice", i+1, m.ToolCallID)
			}
			results[m.ToolCallID] = true
		}
	}
	return nil
}

// checkUsage reports a conversation whose usage is not the sum of its
// messages'. It also reports a message whose usage is not that of the one call
// that wrote it: a call counted twice, or counted without its message.
// (robbytest counts 10 prompt tokens and 5 completion tokens a call made, 1 a
// word answered.)
func checkUsage(c robby.Conversation, msgs []robby.Message) error {
	var sum robby.Usage
	ms, err := decode(msgs)
	if err != nil {
		return err
	}
	for i, m := range ms {
		want := robby.Usage{}
		if m.Role == "assistant" {
			want = robby.Usage{PromptTokens: 10, CompletionTokens: 1, TotalTokens: 11}
			if len(m.ToolCalls) > 0 {
				want.CompletionTokens, want.TotalTokens = 5*int64(len(m.ToolCalls)), 10+5*int64(len(m.ToolCalls))
			}
		}
		if msgs[i].Usage != want {
			return fmt.Errorf("message %d (%s) used %+v, want %+v", i+1, m.Role, msgs[i].Usage, want)
		}
		sum = sum.Add(want)
	}
	if c.Usage != sum {
		return fmt.Errorf("the conversation used %+v, its messages %+v", c.Usage, sum)
	}
	return nil
}

// checkResult reports a result that is not the tool's, nor, for the tool not
// safe to repeat, the interrupted error. A call of lookup interrupted is run
// again.
func checkResult(m crashMessage) error {
	want := map[string][]string{
		"call_l": {"2"},
		"call_t": {"6"},
		"call_s": {"sent 2", "Error: " + robby.ErrInterrupted.Error()},
	}[m.ToolCallID[:min(6, len(m.ToolCallID))]]
	for _, w := range want {
		if m.Content == w {
			return nil
		}
	}
	return fmt.Errorf("result of %s is %q, want one of %q", m.ToolCallID, m.Content, want)
}

// checkValid reports a conversation a provider would refuse: a tool call
// without exactly one result right after its assistant message.
func checkValid(msgs []robby.Message) error {
	if err := checkOnce(msgs); err != nil {
		return err
	}
	ms, _ := decode(msgs)
	for i := 0; i < len(ms); i++ {
		if ms[i].Role != "assistant" || len(ms[i].ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for j := i + 1; j < len(ms) && ms[j].Role == "tool"; j++ {
			answered[ms[j].ToolCallID] = true
			if err := checkResult(ms[j]); err != nil {
				return fmt.Errorf("message %d: %w", j+1, err)
			}
		}
		for _, c := range ms[i].ToolCalls {
			if !answered[c.ID] {
				return fmt.Errorf("message %d: call %s has no result", i+1, c.ID)
			}
		}
		if len(answered) != len(ms[i].ToolCalls) {
			return fmt.Errorf("message %d: results of other calls follow it", i+1)
		}
	}
	return nil
}
