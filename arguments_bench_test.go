package robby_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/robby-go/robby"
)

// BenchmarkStreamedArguments streams 1 MB of tool-call arguments in 4-byte
// fragments (the granularity OpenAI streams at: a model writing a file
// through a tool), next to a baseline streaming the same 1 MB in the same
// 4-byte pieces as text. Both run Agent.Stream against the same in-process
// server; the arguments side also runs the tool and asks for the answer.
// The ratio of their ns/byte is the assembler's cost.
func BenchmarkStreamedArguments(b *testing.B) {
	const size = 1 << 20
	payload := benchArgumentsPayload(size)
	text, args := benchFragmentStreams(payload, 4)
	answer := []byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Written.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	written := robby.NewTool("write_file", "Writes a file.", func(_ context.Context, in struct {
		Content string `json:"content"`
	}) (int, error) {
		return len(in.Content), nil
	})
	ctx := context.Background()
	perByte := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/size, "ns/byte")
	}

	b.Run("text", func(b *testing.B) {
		srv := newBenchServer(b, true, map[int][]byte{1: text})
		a := newRun3Agent(b, srv.URL, nil)
		b.SetBytes(size)
		for b.Loop() {
			a.Reset()
			n := 0
			for ev, err := range a.Stream(ctx, benchPrompt) {
				if err != nil {
					b.Fatal(err)
				}
				n += len(ev.Delta)
			}
			if n != len(payload) {
				b.Fatalf("%d bytes of text streamed, want %d", n, len(payload))
			}
		}
		perByte(b)
	})
	b.Run("arguments", func(b *testing.B) {
		srv := newBenchServer(b, true, map[int][]byte{1: args, 3: answer})
		a := newRun3Agent(b, srv.URL, []robby.Tool{written})
		b.SetBytes(size)
		for b.Loop() {
			a.Reset()
			var res *robby.Result
			for ev, err := range a.Stream(ctx, benchPrompt) {
				if err != nil {
					b.Fatal(err)
				}
				res = ev.Result
			}
			if res == nil || len(res.ToolCalls) != 1 || res.ToolCalls[0].Call.Arguments != payload {
				b.Fatal("the arguments did not arrive whole")
			}
		}
		perByte(b)
	})
}

// benchArgumentsPayload returns the arguments of a write_file call of
// about size bytes, exactly size once encoded: lines of source text.
func benchArgumentsPayload(size int) string {
	const line = "\tfmt.Println(\"hello, world\") // a line of a file\n"
	head, tail := `{"content":"`, `"}`
	enc, _ := json.Marshal(line)
	body := strings.Repeat(string(enc[1:len(enc)-1]), size/(len(enc)-2)+1)
	return head + body[:size-len(head)-len(tail)] + tail
}

// benchFragmentStreams returns two streams of payload in n-byte pieces:
// as text deltas, and as the arguments of one write_file call. The pieces
// end inside escapes of the payload: each is escaped again on the wire.
func benchFragmentStreams(payload string, n int) (text, args []byte) {
	var t, a bytes.Buffer
	const pre = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":`
	const post = `,"finish_reason":null}]}` + "\n\n"
	a.WriteString(pre + `{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":""}}]}` + post)
	for i := 0; i < len(payload); i += n {
		piece, _ := json.Marshal(payload[i:min(i+n, len(payload))])
		t.WriteString(pre + `{"content":`)
		t.Write(piece)
		t.WriteString(`}` + post)
		a.WriteString(pre + `{"tool_calls":[{"index":0,"function":{"arguments":`)
		a.Write(piece)
		a.WriteString(`}}]}` + post)
	}
	end := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"%s"}]}` + "\n\ndata: [DONE]\n\n"
	t.WriteString(strings.Replace(end, "%s", "stop", 1))
	a.WriteString(strings.Replace(end, "%s", "tool_calls", 1))
	return t.Bytes(), a.Bytes()
}
