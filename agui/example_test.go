package agui_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/robby-go/robby"
	"github.com/robby-go/robby/agui"
	"github.com/robby-go/robby/robbytest"
)

// An agent served to AG-UI clients: a RunAgentInput in, its events out.
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
	mux.Handle("POST /ag-ui", agui.New(agent, agui.Options{}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"threadId": "thread-1", "runId": "run-1", "messages": [{"id": "m1", "role": "user", "content": "Hi"}]}`
	resp, err := http.Post(srv.URL+"/ag-ui", "application/json", strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var event struct{ Type, Delta string }
			json.Unmarshal([]byte(data), &event)
			fmt.Println(strings.TrimSpace(event.Type + " " + event.Delta))
		}
	}
	// Output:
	// RUN_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT Hello!
	// TEXT_MESSAGE_END
	// CUSTOM
	// RUN_FINISHED
}
