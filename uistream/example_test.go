package uistream_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/robbytest"
	"github.com/robby-go/robby/uistream"
)

// An agent served to useChat: the request is DefaultChatTransport's, the
// answer a UI message stream.
func Example() {
	model := robbytest.NewServer() // a scripted model; any OpenAI-compatible endpoint will do
	defer model.Close()
	model.Reply(robbytest.Text("Hello!"))
	agent, err := robby.New(robby.WithBaseURL(model.URL), robby.WithModel("m"))
	if err != nil {
		panic(err)
	}
	defer agent.Close()

	mux := http.NewServeMux()
	mux.Handle("/api/", uistream.New(agent, uistream.Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"id": "chat-1", "trigger": "submit-message",
		"messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}`
	resp, err := http.Post(srv.URL+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	fmt.Println(resp.Header.Get("x-vercel-ai-ui-message-stream"))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			fmt.Println(data)
			break
		}
		var part struct{ Type, Delta string }
		json.Unmarshal([]byte(data), &part)
		fmt.Println(strings.TrimSpace(part.Type + " " + part.Delta))
	}
	// Output:
	// v1
	// start
	// start-step
	// text-start
	// text-delta Hello!
	// text-end
	// finish-step
	// finish
	// [DONE]
}
