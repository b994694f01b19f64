package robby

import (
	"fmt"
	"io"
	"os"

	"github.com/robby-go/robby/robbytest"
)

// TypedBenchModel is the model of BenchmarkTypedRun (package robby_test):
// "answer" answers with answer at once, "tool" calls the add tool first.
func TypedBenchModel(name, answer string) robbytest.Reply {
	if name == "answer" {
		return robbytest.Text(answer)
	}
	return robbytest.Func(func(req robbytest.Request) robbytest.Reply {
		if req.Messages[len(req.Messages)-1].Role == "tool" {
			return robbytest.Text(answer)
		}
		return robbytest.ToolCalls(robbytest.Call("add", `{"a":2000000,"b":102650}`))
	})
}

// serveTypedBench is this test binary run as the chat server of
// BenchmarkTypedRunClient, in a process of its own: the model named by
// ROBBY_TEST_CHAT_SERVER answering ROBBY_TEST_CHAT_ANSWER. It prints the
// server's URL and serves until its input ends.
func serveTypedBench() {
	srv := robbytest.NewServer()
	defer srv.Close()
	srv.Fallback(TypedBenchModel(os.Getenv("ROBBY_TEST_CHAT_SERVER"), os.Getenv("ROBBY_TEST_CHAT_ANSWER")))
	fmt.Println(srv.URL)
	io.Copy(io.Discard, os.Stdin)
}
